"""The Ascend SuperPoD source: where an Atlas A3/A5 node sits, from its NPU driver.

Two readers behind ``SpodReader`` (``--ascend-reader``): ``npu-smi`` (the CLI), ``dcmi``
(``libdcmi.so`` through ctypes), or ``auto`` (DCMI, then npu-smi if DCMI fails).

Roles reported (the ascend-superpod profile writes them to the label keys in brackets, as
decimal strings, as Ascend's device plugin writes them):

- ``superpod`` (``huawei.com/topotree.superpodid``) = Super Pod ID, whenever it is a valid
  ID; with it the agent adds the tree label ``huawei.com/topotree`` = the profile's tree
  name (``--topotree-name``, never empty), which is the profile's, not a driver ID.
- ``server`` (``huawei.com/topotree.serverid``) = Server Index and ``rack``
  (``huawei.com/topotree.rackid``) = chassis ID, **on A5 only**. The rule, and the facts it
  rests on:

  * mind-cluster's device plugin writes serverid (and rackid) only when the chip is an
    Ascend910A5, and writes rackid only when ``super_pod_type`` is 1 (1D pod) or 2 (2D pod);
    the rack ID is the struct's ``chassis_id``.
  * A3 drivers' ``dcmi_spod_info`` has no ``chassis_id``/``super_pod_type``: those words
    are reserved and read 0, and the device plugin treats a ``super_pod_type`` of 0 as
    abnormal for A5.
  * So ``--ascend-generation auto`` (default) takes a node as A5 when its
    ``super_pod_type`` is 1 or 2; ``a5`` forces A5 (serverid always, rackid when the type
    is 1/2, or unknown because npu-smi did not print it and a chassis ID is present);
    ``a3`` labels the SuperPoD ID only.

- An ID of 0xffffffff (-1: not set) or 0xfffffffe (-2: the driver failed) is no ID. An
  invalid Super Pod ID means ``NoData``: no label at all, not even the tree label.
- The group ID (``huawei.com/topotree.groupid``) is no role of this source and is never
  touched: the bulk CSV / LLD path owns it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from labeler.base.errors import UsageError
from labeler.base.flags import enum_flag, positive_number
from labeler.base.logs import logger
from labeler.core.profiles import Profile, Roles
from labeler.sources import Flag, NoData, Reading, Settings, SourceKind, options
from labeler.sources.ascend.npusmi import DEFAULT_NPU_SMI, DEFAULT_TIMEOUT, NpuSmiReader

if TYPE_CHECKING:
    from labeler.sources.ascend.dcmi import DcmiReader
from labeler.sources.ascend.spod import (
    POD_TYPES_WITH_RACK,
    AscendError,
    AscendToolMissing,
    SpodInfo,
    SpodReader,
    id_problem,
)

__all__ = [
    "KIND",
    "ROLES",
    "AscendOptions",
    "AscendSource",
    "AutoReader",
    "DcmiReader",
    "Generation",
    "NpuSmiReader",
    "Reader",
    "SpodInfo",
    "SpodReader",
    "make_reader",
    "reading_from",
]

log = logger(__name__)

NAME = "ascend"


class Reader(StrEnum):
    """``--ascend-reader``: libdcmi.so via ctypes, the npu-smi CLI, or DCMI then npu-smi."""

    AUTO = "auto"
    NPU_SMI = "npu-smi"
    DCMI = "dcmi"


class Generation(StrEnum):
    """``--ascend-generation``: A5 adds the rack and server IDs; auto decides by the
    SuperPoD type the driver reports."""

    AUTO = "auto"
    A3 = "a3"
    A5 = "a5"


SUPERPOD, RACK, SERVER = "superpod", "rack", "server"
# The profile's level named "superpod" takes the Super Pod ID; its extra labels are the
# rack (chassis) ID, then the server index.
ROLES = Roles(levels=(SUPERPOD,), extras=(RACK, SERVER))


@dataclass(frozen=True)
class AscendOptions:
    """How to ask the NPU driver; the defaults here are the flags' defaults."""

    reader: Reader = Reader.AUTO
    dcmi_lib: str | None = None
    npu_smi: str = DEFAULT_NPU_SMI
    npu_smi_timeout: float = DEFAULT_TIMEOUT
    generation: Generation = Generation.AUTO


DEFAULTS = AscendOptions()
FLAGS = (
    Flag(
        "--ascend-reader",
        "reader",
        "how to ask the driver: libdcmi.so via ctypes, the npu-smi CLI, or auto "
        f"(DCMI, then npu-smi; default {DEFAULTS.reader})",
        **enum_flag(Reader),
    ),
    Flag(
        "--dcmi-lib",
        "dcmi_lib",
        "path of libdcmi.so (default: searched under /usr/local/Ascend/driver/lib64 "
        "and /usr/local/dcmi)",
        metavar="PATH",
    ),
    Flag("--npu-smi", "npu_smi", "npu-smi command or path", metavar="PATH"),
    Flag(
        "--npu-smi-timeout",
        "npu_smi_timeout",
        f"seconds per npu-smi call (default {DEFAULTS.npu_smi_timeout:g})",
        type=positive_number,
        metavar="S",
    ),
    Flag(
        "--ascend-generation",
        "generation",
        "a5 adds huawei.com/topotree.rackid/.serverid; auto: A5 when the driver "
        f"reports a 1D/2D SuperPoD type (default {DEFAULTS.generation})",
        **enum_flag(Generation),
    ),
)


def _build(profile: Profile, settings: Settings, stop: threading.Event) -> AscendSource:
    # The driver answers at once or times out on its own; there are no retries to stop.
    opts = options(DEFAULTS, settings, NAME)
    reader = make_reader(
        opts.reader, dcmi_lib=opts.dcmi_lib, npu_smi=opts.npu_smi, timeout=opts.npu_smi_timeout
    )
    return AscendSource(reader, generation=opts.generation)


class AutoReader:
    """DCMI first (no subprocess, what the device plugin uses), npu-smi if DCMI fails."""

    name = "auto"

    def __init__(self, dcmi: SpodReader, npu_smi: SpodReader) -> None:
        self.dcmi = dcmi
        self.npu_smi = npu_smi

    def read_spod(self) -> SpodInfo:
        try:
            return self.dcmi.read_spod()
        except AscendError as first:
            level = logging.DEBUG if isinstance(first, AscendToolMissing) else logging.WARNING
            log.log(level, "DCMI unavailable (%s); trying npu-smi", first)
            try:
                return self.npu_smi.read_spod()
            except AscendError as second:
                raise type(second)(
                    f"neither reader worked. dcmi: {first} | npu-smi: {second}"
                ) from second


def make_reader(
    kind: Reader,
    *,
    dcmi_lib: str | None = None,
    npu_smi: str = DEFAULT_NPU_SMI,
    timeout: float = DEFAULT_TIMEOUT,
) -> SpodReader:
    """The reader ``--ascend-reader`` names."""
    from labeler.sources.ascend.dcmi import DcmiReader

    if kind == Reader.NPU_SMI:
        return NpuSmiReader(npu_smi, timeout=timeout)
    if kind == Reader.DCMI:
        return DcmiReader(dcmi_lib)
    if kind == Reader.AUTO:
        return AutoReader(DcmiReader(dcmi_lib), NpuSmiReader(npu_smi, timeout=timeout))
    raise UsageError(f"--ascend-reader {kind!r}: choose one of {', '.join(Reader)}")


def reading_from(
    info: SpodInfo, *, generation: Generation = AscendOptions.generation
) -> Reading | NoData:
    """The IDs one SuperPoD answer gives, by role (the rule is in the module docstring)."""
    details = {
        "device": info.device,
        "sdid": str(info.sdid),
        "super_pod_size": str(info.super_pod_size),
        "super_pod_type": "unknown" if info.super_pod_type is None else str(info.super_pod_type),
    }
    bad = id_problem(info.super_pod_id)
    if bad:
        return NoData(f"Super Pod ID on {info.device} is {bad}; no SuperPoD labels")
    ids = {SUPERPOD: str(info.super_pod_id)}
    pod_type = info.super_pod_type
    if generation == Generation.A5:
        a5 = True
    elif generation == Generation.A3:
        a5 = False
    else:
        a5 = pod_type in POD_TYPES_WITH_RACK
    details["generation"] = (Generation.A5 if a5 else Generation.A3).value
    if not a5:
        return Reading(ids=ids, details=details)
    bad = id_problem(info.server_index)
    if bad:
        details["serverid"] = f"skipped: Server Index is {bad}"
    else:
        ids[SERVER] = str(info.server_index)
    rack_type = pod_type in POD_TYPES_WITH_RACK or (
        pod_type is None and generation == Generation.A5
    )
    if not rack_type:
        details["rackid"] = f"skipped: super_pod_type {pod_type} is not a 1D/2D pod"
    elif info.chassis_id is None:
        details["rackid"] = "skipped: the reader does not report a chassis ID"
    elif bad := id_problem(info.chassis_id):
        details["rackid"] = f"skipped: chassis ID is {bad}"
    else:
        ids[RACK] = str(info.chassis_id)
    return Reading(ids=ids, details=details)


@dataclass
class AscendSource:
    """``Source`` for the ascend-superpod profile: reports the superpod, rack and server
    roles, never the group, which the bulk CSV/LLD path owns."""

    reader: SpodReader
    generation: Generation = AscendOptions.generation
    name: str = NAME
    roles: Roles = ROLES

    def __post_init__(self) -> None:
        # A source is built from settings any caller may give: take the value, not the type.
        if self.generation not in tuple(Generation):
            raise UsageError(
                f"--ascend-generation {self.generation!r}: choose one of " + ", ".join(Generation)
            )
        self.generation = Generation(self.generation)

    def read(self) -> Reading | NoData:
        info = self.reader.read_spod()
        result = reading_from(info, generation=self.generation)
        details = result.details if isinstance(result, Reading) else {}
        log.debug(
            "ascend reader=%s device=%s result=%s %s",
            self.reader.name,
            info.device,
            type(result).__name__,
            dict(details),
        )
        return result


KIND = SourceKind(
    NAME, "Ascend NPU driver (source ascend, profile ascend-superpod)", DEFAULTS, FLAGS, _build
)


def __getattr__(name: str) -> Any:
    # The DCMI reader needs ctypes; the agent's flags (and so every command's --help) need
    # only this package's defaults, so it is imported when first asked for.
    if name == "DcmiReader":
        from labeler.sources.ascend.dcmi import DcmiReader

        return DcmiReader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
