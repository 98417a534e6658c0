"""What ``advise`` says about accelerators that only DRA publishes.

Kueue's Topology-Aware Scheduling builds its capacity from node allocatable only: DRA
devices (ResourceSlices) and what pods claim of them are not part of it (Kueue's
documentation, "Dynamic Resource Allocation": no DRA together with TAS). The simulator
follows Kueue, so a node whose GPUs only a DRA driver publishes takes no pod of an
``nvidia.com/gpu`` request here either. ``advise`` says so, with the nodes concerned,
rather than leaving them silently out.
"""

from __future__ import annotations

import fnmatch
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labeler.base.text import a_few
from labeler.core.capacity import Node
from labeler.core.dra import Devices

NOT_MODELLED = (
    "Not modelled: DRA claims (the pods' resourceClaims and ResourceClaimTemplates, "
    "DeviceClasses and the extended resource names they map, devices already allocated to "
    "claims); Kueue's TAS leaves them out of its capacity too."
)
SHOWN = 5  # node names in the text; -o json has them all
WIDTH = 92


@dataclass(frozen=True)
class DraNote:
    """Nodes with DRA devices, and those of them without any of ``resources`` allocatable."""

    devices: Mapping[str, Devices]  # node -> (driver, devices), nodes of the snapshot only
    resources: tuple[str, ...]
    without: tuple[str, ...]

    def lines(self) -> list[str]:
        per_driver: dict[str, int] = {}
        for found in self.devices.values():
            for driver, n in found:
                per_driver[driver] = per_driver.get(driver, 0) + n
        counts = ", ".join(f"{n} {d}" for d, n in sorted(per_driver.items()))
        names = sorted(self.devices)
        out = [
            f"DRA: {len(names)} node(s) publish {counts} device(s) in ResourceSlices: "
            f"{a_few(names, SHOWN)}"
        ]
        body = ""
        if self.without:
            body = (
                f"{len(self.without)} of them have no allocatable "
                f"{' or '.join(self.resources)} ({a_few(self.without, SHOWN)}): Kueue's TAS "
                "counts node allocatable only, not DRA devices, so it places no pod that "
                "requests it there, and neither does advise. "
            )
        out += textwrap.wrap(
            body + NOT_MODELLED, WIDTH, initial_indent="  ", subsequent_indent="  "
        )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "devices": {n: dict(d) for n, d in sorted(self.devices.items())},
            "withoutAllocatable": list(self.without),
            "resources": list(self.resources),
            "notModelled": NOT_MODELLED,
        }


def dra_note(
    nodes: Sequence[Node], devices: Mapping[str, Devices], resources: Sequence[str]
) -> DraNote | None:
    """The note for ``nodes``, or None when none has DRA devices. ``resources`` are the
    accelerator resources (names or globs) a pod would request instead."""
    by_name = {n.name: n for n in nodes}
    found = {name: d for name, d in devices.items() if name in by_name and d}
    if not found:
        return None
    without = sorted(
        name
        for name in found
        if not any(
            fnmatch.fnmatchcase(r, p) and n > 0
            for r, n in by_name[name].allocatable.items()
            for p in resources
        )
    )
    return DraNote(found, tuple(resources), tuple(without))
