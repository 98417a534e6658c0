"""What the Ascend driver says about a node's SuperPoD, and the typed ways reading it fails.

Both readers (``npu-smi`` and ``libdcmi.so``) produce the same ``SpodInfo``: the fields of
the driver's ``struct dcmi_spod_info`` (48 bytes, all ``unsigned int``: sdid, scale_type
a.k.a. super_pod_size, super_pod_id, server_id a.k.a. server_index, chassis_id,
super_pod_type, reserve[6]). A3 drivers predate ``chassis_id``/``super_pod_type``; those
words are part of the reserved area there and read as 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from labeler.sources import SourceError

# The driver's "no value" markers, as unsigned 32-bit words: 0xffffffff (-1, not set, e.g.
# a node that is not part of a SuperPoD) and 0xfffffffe (-2, the driver failed to read it).
INVALID_ID = 0xFFFFFFFF
FAILED_ID = 0xFFFFFFFE

# super_pod_type codes (mind-cluster's ProductType constants): 0 8P server, 1 1D pod,
# 2 2D pod, 3 16P server, 4 32P server. Only the pod types carry a rack (chassis) ID.
POD_TYPES_WITH_RACK = frozenset({1, 2})

DRIVER_HINT = (
    "the container needs the host's Ascend driver mounted read-only "
    "(/usr/local/Ascend/driver, /usr/local/bin/npu-smi, /usr/local/dcmi) and the device "
    "files /dev/davinci_manager, /dev/devmm_svm and /dev/hisi_hdc (see manifests/ascend/)"
)


class AscendError(SourceError):
    """The Ascend driver could not be read."""


class AscendToolMissing(AscendError):
    """``npu-smi`` or ``libdcmi.so`` is not where we looked."""


class AscendCommandFailed(AscendError):
    """``npu-smi`` ran and exited non-zero, or a DCMI call returned an error code."""


class AscendTimeout(AscendError):
    """``npu-smi`` did not answer in time (a hung driver)."""


class AscendBadOutput(AscendError):
    """The driver answered something we cannot parse."""


class AscendNoDevice(AscendError):
    """The driver lists no NPU, so there is nothing to ask."""


def id_problem(value: int) -> str | None:
    """Why a driver ID word is not a usable ID, or None if it is."""
    if value == INVALID_ID or value == -1:
        return f"{value} (0xffffffff: not set, e.g. the node is not in a SuperPoD)"
    if value == FAILED_ID or value == -2:
        return f"{value} (0xfffffffe: the driver failed to read it)"
    if value < 0 or value > INVALID_ID:
        return f"{value} (outside the driver's unsigned 32-bit range)"
    return None


@dataclass(frozen=True)
class SpodInfo:
    """One device's SuperPoD answer. ``chassis_id``/``super_pod_type`` are None when the
    reader cannot see them (npu-smi on drivers that do not print them)."""

    device: str  # which device answered, for logs: "npu 0 chip 0" or "card 0 device 0"
    sdid: int
    super_pod_size: int
    super_pod_id: int
    server_index: int
    chassis_id: int | None = None
    super_pod_type: int | None = None


class SpodReader(Protocol):
    """One way of asking the driver for the SuperPoD info of the first device that answers.

    Raises an ``AscendError`` subclass whose message says what to install or mount.
    """

    name: str

    def read_spod(self) -> SpodInfo: ...
