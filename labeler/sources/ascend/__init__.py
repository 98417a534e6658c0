"""The Ascend SuperPoD source: where an Atlas A3/A5 node sits, from its NPU driver.

Two readers behind ``SpodReader`` (``--ascend-reader``): ``npu-smi`` (the CLI), ``dcmi``
(``libdcmi.so`` through ctypes), or ``auto`` (DCMI, then npu-smi if DCMI fails).

What is labeled (decimal strings, as Ascend's device plugin writes them):

- ``huawei.com/topotree.superpodid`` = Super Pod ID, whenever it is a valid ID; with it the
  agent adds the tree label ``huawei.com/topotree`` = the profile's tree name
  (``--topotree-name``, never empty). The tree label is in the source's ``keys`` (the
  agent's scope) but not in its readings: it is not a driver ID.
- ``huawei.com/topotree.serverid`` = Server Index and ``huawei.com/topotree.rackid`` =
  chassis ID, **on A5 only**. The rule, and the facts it rests on:

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
- ``huawei.com/topotree.groupid`` is never touched: the bulk CSV / LLD path owns it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from labeler.errors import UsageError
from labeler.labels import value_problems
from labeler.profiles import (
    ASCEND_RACK,
    ASCEND_SERVER,
    ASCEND_SUPERPOD,
    ASCEND_TREE_LABEL,
    DEFAULT_TREE_NAME,
)
from labeler.sources import NoData, Reading
from labeler.sources.ascend.dcmi import DcmiReader
from labeler.sources.ascend.npusmi import DEFAULT_NPU_SMI, DEFAULT_TIMEOUT, NpuSmiReader
from labeler.sources.ascend.spod import (
    POD_TYPES_WITH_RACK,
    AscendError,
    AscendToolMissing,
    SpodInfo,
    SpodReader,
    id_problem,
)

__all__ = [
    "GENERATIONS",
    "READERS",
    "AscendSource",
    "AutoReader",
    "DcmiReader",
    "NpuSmiReader",
    "SpodInfo",
    "SpodReader",
    "check_tree_name",
    "make_reader",
    "reading_from",
]

log = logging.getLogger(__name__)

READERS = ("auto", "npu-smi", "dcmi")
GENERATIONS = ("auto", "a3", "a5")


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
    kind: str = "auto",
    *,
    dcmi_lib: str | None = None,
    npu_smi: str = DEFAULT_NPU_SMI,
    timeout: float = DEFAULT_TIMEOUT,
) -> SpodReader:
    """The reader ``--ascend-reader`` names."""
    if kind == "npu-smi":
        return NpuSmiReader(npu_smi, timeout=timeout)
    if kind == "dcmi":
        return DcmiReader(dcmi_lib)
    if kind == "auto":
        return AutoReader(DcmiReader(dcmi_lib), NpuSmiReader(npu_smi, timeout=timeout))
    raise UsageError(f"--ascend-reader {kind!r}: choose one of {', '.join(READERS)}")


def check_tree_name(name: str, tree_label: str = ASCEND_TREE_LABEL) -> str:
    """A tree name is a label value, and never empty (ascend-for-volcano rejects '')."""
    if not name:
        raise UsageError(
            f"--topotree-name must not be empty: ascend-for-volcano rejects an empty "
            f"{tree_label}; leave the flag out for {DEFAULT_TREE_NAME!r}"
        )
    problems = value_problems(name)
    if problems:
        raise UsageError(
            f"--topotree-name {name!r} is not a valid value for {tree_label}: "
            + "; ".join(problems)
        )
    return name


def reading_from(info: SpodInfo, *, generation: str = "auto") -> Reading | NoData:
    """The labels one SuperPoD answer gives (the rule is in the module docstring)."""
    details = {
        "device": info.device,
        "sdid": str(info.sdid),
        "super_pod_size": str(info.super_pod_size),
        "super_pod_type": "unknown" if info.super_pod_type is None else str(info.super_pod_type),
    }
    bad = id_problem(info.super_pod_id)
    if bad:
        return NoData(f"Super Pod ID on {info.device} is {bad}; no SuperPoD labels")
    ids = {ASCEND_SUPERPOD: str(info.super_pod_id)}
    pod_type = info.super_pod_type
    if generation == "a5":
        a5 = True
    elif generation == "a3":
        a5 = False
    else:
        a5 = pod_type in POD_TYPES_WITH_RACK
    details["generation"] = "a5" if a5 else "a3"
    if not a5:
        return Reading(ids=ids, details=details)
    bad = id_problem(info.server_index)
    if bad:
        details["serverid"] = f"skipped: Server Index is {bad}"
    else:
        ids[ASCEND_SERVER] = str(info.server_index)
    rack_type = pod_type in POD_TYPES_WITH_RACK or (pod_type is None and generation == "a5")
    if not rack_type:
        details["rackid"] = f"skipped: super_pod_type {pod_type} is not a 1D/2D pod"
    elif info.chassis_id is None:
        details["rackid"] = "skipped: the reader does not report a chassis ID"
    elif bad := id_problem(info.chassis_id):
        details["rackid"] = f"skipped: chassis ID is {bad}"
    else:
        ids[ASCEND_RACK] = str(info.chassis_id)
    return Reading(ids=ids, details=details)


@dataclass
class AscendSource:
    """``Source`` for the ascend-superpod profile.

    ``keys`` (the agent's scope) = tree label, superpodid, rackid, serverid — never
    ``groupid``, which the bulk CSV/LLD path owns.
    """

    reader: SpodReader
    generation: str = "auto"
    tree_label: str = ASCEND_TREE_LABEL
    name: str = "ascend"

    def __post_init__(self) -> None:
        if self.generation not in GENERATIONS:
            raise UsageError(
                f"--ascend-generation {self.generation!r}: choose one of " + ", ".join(GENERATIONS)
            )
        self.keys: tuple[str, ...] = (
            self.tree_label,
            ASCEND_SUPERPOD,
            ASCEND_RACK,
            ASCEND_SERVER,
        )

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
