"""Read the SuperPoD info with ``npu-smi``, the driver's command-line twin of DCMI.

- Devices: ``npu-smi info -m`` (columns NPU ID, Chip ID, Chip Logic ID, Chip Name; rows
  whose logic ID is ``-`` are MCUs, not NPUs); if that fails, ``npu-smi info -l`` (blocks of
  ``NPU ID : n`` … ``Chip Count : k``).
- Info: ``npu-smi info -t spod-info -i <npu> -c <chip>`` prints ``Key : value`` lines:
  ``SDID``, ``Super Pod Size``, ``Super Pod ID``, ``Server Index`` and, where the driver
  knows them, a chassis/rack ID and a super pod type.

A device that errors is skipped and the next one is asked: one faulty NPU must not hide
the node's topology.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from labeler.base.logs import logger
from labeler.sources.ascend.spod import (
    DRIVER_HINT,
    AscendBadOutput,
    AscendCommandFailed,
    AscendError,
    AscendNoDevice,
    AscendTimeout,
    AscendToolMissing,
    SpodInfo,
)

log = logger(__name__)

DEFAULT_NPU_SMI = "npu-smi"
DEFAULT_TIMEOUT = 10.0

_KV = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 _()/-]*?)\s*:\s*(\S.*?)\s*$")
_INT = re.compile(r"^-?\d+$|^0[xX][0-9a-fA-F]+$")

# Field names as npu-smi prints them (normalised: lowercase, single spaces).
_REQUIRED = {
    "sdid": "sdid",
    "super pod size": "super_pod_size",
    "super pod id": "super_pod_id",
    "server index": "server_index",
}
_OPTIONAL = {
    "chassis id": "chassis_id",
    "rack id": "chassis_id",
    "super pod type": "super_pod_type",
}


@dataclass(frozen=True)
class Chip:
    npu: int
    chip: int

    def __str__(self) -> str:
        return f"npu {self.npu} chip {self.chip}"


def _parse_int(text: str) -> int | None:
    text = text.strip()
    if not _INT.match(text):
        return None
    return int(text, 0) if text.lower().startswith("0x") else int(text)


def parse_map(text: str) -> list[Chip]:
    """NPU chips from ``npu-smi info -m``; MCU rows (logic ID ``-``) are left out."""
    chips: list[Chip] = []
    seen_header = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if "NPU ID" in line and "Chip ID" in line:
            seen_header = True
            continue
        parts = line.split()
        if len(parts) < 3:
            continue
        npu, chip, logic = _parse_int(parts[0]), _parse_int(parts[1]), _parse_int(parts[2])
        if npu is None or chip is None:
            continue
        if logic is None:  # "-": an MCU, not a compute chip
            continue
        chips.append(Chip(npu, chip))
    if not seen_header and not chips:
        raise AscendBadOutput(
            f"'npu-smi info -m' printed no device table: {_excerpt(text)!r}; {DRIVER_HINT}"
        )
    return chips


def parse_list(text: str) -> list[Chip]:
    """NPU chips from ``npu-smi info -l`` (chips 0..Chip Count-1 of each NPU ID)."""
    chips: list[Chip] = []
    npu: int | None = None
    for line in text.splitlines():
        m = _KV.match(line)
        if not m:
            continue
        key, value = " ".join(m.group(1).lower().split()), m.group(2)
        if key == "npu id":
            npu = _parse_int(value)
        elif key == "chip count" and npu is not None:
            count = _parse_int(value) or 1
            chips.extend(Chip(npu, c) for c in range(max(count, 1)))
            npu = None
    return chips


def parse_spod(text: str, device: str) -> SpodInfo:
    """A ``SpodInfo`` from ``npu-smi info -t spod-info`` output, or AscendBadOutput."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        m = _KV.match(line)
        if not m:
            continue
        key = " ".join(m.group(1).lower().split())
        field = _REQUIRED.get(key) or _OPTIONAL.get(key)
        if field is None:
            continue
        number = _parse_int(m.group(2))
        if number is None:
            raise AscendBadOutput(
                f"npu-smi spod-info for {device}: {m.group(1)!r} is {m.group(2)!r}, "
                "not a number; is this an npu-smi that supports '-t spod-info' (Atlas A3/A5 "
                "driver)?"
            )
        found[field] = number
    missing = [name for name, field in _REQUIRED.items() if field not in found]
    if missing:
        raise AscendBadOutput(
            f"npu-smi spod-info for {device} lacks {', '.join(missing)}: {_excerpt(text)!r}; "
            "it needs an Atlas A3/A5 driver whose npu-smi supports '-t spod-info'"
        )
    return SpodInfo(
        device=device,
        sdid=found["sdid"],
        super_pod_size=found["super_pod_size"],
        super_pod_id=found["super_pod_id"],
        server_index=found["server_index"],
        chassis_id=found.get("chassis_id"),
        super_pod_type=found.get("super_pod_type"),
    )


def _excerpt(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


class NpuSmiReader:
    """``SpodReader`` over the ``npu-smi`` command."""

    name = "npu-smi"

    def __init__(self, path: str = DEFAULT_NPU_SMI, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout

    def _binary(self) -> str:
        import shutil  # here: every command's --help imports this module for its defaults

        found = shutil.which(self.path)
        if found is None:
            where = "on PATH" if os.sep not in self.path else "there"
            raise AscendToolMissing(
                f"npu-smi not found ({self.path!r} is not an executable {where}); install the "
                "Ascend driver on the host, or pass --npu-smi PATH; in Kubernetes "
                f"{DRIVER_HINT}"
            )
        return found

    def _run(self, binary: str, args: Sequence[str]) -> str:
        cmd = [binary, *args]
        shown = "npu-smi " + " ".join(args)
        import subprocess

        try:
            done = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise AscendTimeout(
                f"'{shown}' did not answer within {self.timeout:g} s; the NPU driver may be "
                "hung (check 'npu-smi info' on the host and dmesg)"
            ) from e
        except OSError as e:
            raise AscendToolMissing(f"cannot run {binary}: {e.strerror or e}; {DRIVER_HINT}") from e
        if done.returncode != 0:
            said = _excerpt(done.stderr or done.stdout) or "no output"
            raise AscendCommandFailed(
                f"'{shown}' exited with {done.returncode}: {said}; {DRIVER_HINT}"
            )
        return done.stdout

    def chips(self, binary: str) -> list[Chip]:
        """The NPU chips to ask, from ``-m``, else ``-l``."""
        try:
            chips = parse_map(self._run(binary, ["info", "-m"]))
        except AscendTimeout:
            raise
        except AscendError as first:
            log.info("npu-smi info -m failed (%s); trying npu-smi info -l", first)
            try:
                chips = parse_list(self._run(binary, ["info", "-l"]))
            except AscendError as second:
                raise type(second)(f"{first}; and then {second}") from second
        if not chips:
            raise AscendNoDevice(
                f"npu-smi lists no NPU on this node; {DRIVER_HINT}; if the node has no "
                "Ascend NPU, do not run the ascend-superpod agent on it (see the node "
                "affinity in manifests/ascend/)"
            )
        return chips

    def read_spod(self) -> SpodInfo:
        binary = self._binary()
        errors: list[AscendError] = []
        for chip in self.chips(binary):
            args = ["info", "-t", "spod-info", "-i", str(chip.npu), "-c", str(chip.chip)]
            try:
                return parse_spod(self._run(binary, args), str(chip))
            except AscendTimeout:
                raise  # a hung driver hangs for every chip; do not multiply the wait
            except AscendError as e:
                log.warning("npu-smi spod-info failed for %s: %s", chip, e)
                errors.append(e)
        last = errors[-1]
        raise type(last)(f"no NPU answered spod-info ({len(errors)} tried); last error: {last}")
