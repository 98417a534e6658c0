"""Read the SuperPoD info straight from the driver's ``libdcmi.so`` through ``ctypes``.

This is what Ascend's device plugin does, without a subprocess per device:

- ``int dcmi_init(void)``
- ``int dcmi_get_card_num_list(int *card_num, int *card_list, int list_len)``
- ``int dcmi_get_device_num_in_card(int card_id, int *device_num)``
- ``int dcmi_get_device_info(int card_id, int device_id, int main_cmd, unsigned int
  sub_cmd, void *buf, unsigned int *size)`` with main command 12 (chip info) and sub
  command 1 (SuperPoD info) filling ``struct dcmi_spod_info`` (48 bytes).

Every call returns 0 on success. The first device that answers wins.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

from labeler.base.logs import logger
from labeler.sources.ascend.spod import (
    DRIVER_HINT,
    AscendCommandFailed,
    AscendError,
    AscendNoDevice,
    AscendToolMissing,
    SpodInfo,
)

log = logger(__name__)

LIBRARY = "libdcmi.so"
DRIVER_LIB_DIRS = (
    "/usr/local/Ascend/driver/lib64/driver",
    "/usr/local/Ascend/driver/lib64/common",
    "/usr/local/Ascend/driver/lib64",
    "/usr/local/dcmi",
)
MAIN_CMD_CHIP_INFO = 12
SUB_CMD_SPOD_INFO = 1
MAX_CARDS = 64


class SpodInfoStruct(ctypes.Structure):
    _fields_ = (
        ("sdid", ctypes.c_uint),
        ("scale_type", ctypes.c_uint),  # the SuperPoD size
        ("super_pod_id", ctypes.c_uint),
        ("server_id", ctypes.c_uint),  # the server index
        ("chassis_id", ctypes.c_uint),  # the rack, on A5
        ("super_pod_type", ctypes.c_uint),
        ("reserve", ctypes.c_uint * 6),
    )


def candidate_paths(explicit: str | None) -> list[str]:
    """Where to look for the library: the flag, else the driver's usual directories."""
    if explicit:
        return [explicit]
    return [os.path.join(d, LIBRARY) for d in DRIVER_LIB_DIRS]


class DcmiReader:
    """``SpodReader`` over ``libdcmi.so``."""

    name = "dcmi"

    def __init__(self, library: str | None = None, *, search: Sequence[str] | None = None) -> None:
        self.library = library
        self.search = list(search) if search is not None else candidate_paths(library)
        self._lib: ctypes.CDLL | None = None
        self._path = ""

    def find(self) -> str:
        """The first library path that exists; AscendToolMissing names every place tried."""
        for path in self.search:
            if os.path.isfile(path):
                return path
        tried = ", ".join(self.search)
        raise AscendToolMissing(
            f"{LIBRARY} not found (tried {tried}); pass --dcmi-lib PATH or use "
            f"--ascend-reader npu-smi; {DRIVER_HINT}"
        )

    def _load(self) -> ctypes.CDLL:
        if self._lib is not None:
            return self._lib
        path = self.find()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise AscendToolMissing(
                f"cannot load {path}: {e}; the library needs the driver's other libraries "
                "(set LD_LIBRARY_PATH to /usr/local/Ascend/driver/lib64/driver:"
                f"/usr/local/Ascend/driver/lib64/common); {DRIVER_HINT}"
            ) from e
        for fn, args in (
            ("dcmi_init", []),
            ("dcmi_get_card_num_list", [ctypes.POINTER(ctypes.c_int)] * 2 + [ctypes.c_int]),
            ("dcmi_get_device_num_in_card", [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]),
            (
                "dcmi_get_device_info",
                [
                    ctypes.c_int,
                    ctypes.c_int,
                    ctypes.c_int,
                    ctypes.c_uint,
                    ctypes.c_void_p,
                    ctypes.POINTER(ctypes.c_uint),
                ],
            ),
        ):
            try:
                func = getattr(lib, fn)
            except AttributeError as e:
                raise AscendToolMissing(
                    f"{path} has no {fn}(); is it the Ascend driver's DCMI library "
                    "(Atlas A3/A5 driver)?"
                ) from e
            func.argtypes = args
            func.restype = ctypes.c_int
        rc = lib.dcmi_init()
        if rc != 0:
            raise AscendCommandFailed(
                f"dcmi_init() in {path} returned {rc}; the driver is not usable from this "
                f"container; {DRIVER_HINT}"
            )
        self._lib, self._path = lib, path
        return lib

    def devices(self, lib: ctypes.CDLL) -> list[tuple[int, int]]:
        """(card, device) pairs, in the driver's order."""
        count = ctypes.c_int(0)
        cards = (ctypes.c_int * MAX_CARDS)()
        rc = lib.dcmi_get_card_num_list(ctypes.byref(count), cards, MAX_CARDS)
        if rc != 0:
            raise AscendCommandFailed(f"dcmi_get_card_num_list() returned {rc}; {DRIVER_HINT}")
        pairs: list[tuple[int, int]] = []
        for i in range(max(0, min(count.value, MAX_CARDS))):
            card = cards[i]
            n = ctypes.c_int(0)
            rc = lib.dcmi_get_device_num_in_card(card, ctypes.byref(n))
            if rc != 0:
                log.warning("dcmi_get_device_num_in_card(card %d) returned %d", card, rc)
                continue
            pairs.extend((card, dev) for dev in range(max(0, n.value)))
        if not pairs:
            raise AscendNoDevice(
                f"{self._path or LIBRARY} lists no NPU on this node; {DRIVER_HINT}; if the node "
                "has no Ascend NPU, do not run the ascend-superpod agent on it"
            )
        return pairs

    def read_spod(self) -> SpodInfo:
        lib = self._load()
        errors: list[AscendError] = []
        for card, dev in self.devices(lib):
            info = SpodInfoStruct()
            size = ctypes.c_uint(ctypes.sizeof(info))
            rc = lib.dcmi_get_device_info(
                card,
                dev,
                MAIN_CMD_CHIP_INFO,
                SUB_CMD_SPOD_INFO,
                ctypes.byref(info),
                ctypes.byref(size),
            )
            if rc != 0:
                log.warning("dcmi_get_device_info(card %d, device %d) returned %d", card, dev, rc)
                errors.append(
                    AscendCommandFailed(
                        f"dcmi_get_device_info(card {card}, device {dev}, spod info) returned "
                        f"{rc}; an Atlas A3/A5 driver is needed for SuperPoD info"
                    )
                )
                continue
            return SpodInfo(
                device=f"card {card} device {dev}",
                sdid=info.sdid,
                super_pod_size=info.scale_type,
                super_pod_id=info.super_pod_id,
                server_index=info.server_id,
                chassis_id=info.chassis_id,
                super_pod_type=info.super_pod_type,
            )
        raise AscendCommandFailed(
            f"no NPU answered the DCMI SuperPoD query ({len(errors)} tried); last: {errors[-1]}"
        )
