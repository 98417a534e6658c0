"""Which nodes the cluster-wide commands look at: the accelerator nodes, or a selector's.

A normal cluster also has CPU, control-plane and system nodes that no topology-aware
scheduler places a GPU/NPU job on, and that nobody labels. ``audit``, ``check
--from-cluster`` and ``generate --from-cluster`` therefore judge only the nodes in one
scope: by default every node with a positive allocatable count of an accelerator resource
(``nvidia.com/gpu``, ``huawei.com/Ascend*``) or with devices of a DRA driver in its
ResourceSlices (``gpu.nvidia.com``; :mod:`labeler.core.dra`), or, with
``--node-selector``, every node the label selector matches. The same flags mean the same
nodes in every command.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from labeler.base.logs import logger
from labeler.core.dra import DEFAULT_DRIVERS, Devices

if TYPE_CHECKING:  # a type here: the commands whose --help names the scope need no selector
    from labeler.core.selector import Selector

log = logger(__name__)

DEFAULT_RESOURCES: tuple[str, ...] = ("nvidia.com/gpu", "huawei.com/Ascend*")


class ScopedNode(Protocol):
    """What the scope reads of a node (NodeInfo has it)."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def allocatable(self) -> Mapping[str, str]: ...


N = TypeVar("N", bound=ScopedNode)


@dataclass(frozen=True)
class Scope:
    """Which nodes are looked at.

    With a selector, every node it matches; otherwise every node with a positive
    allocatable count of one of ``resources`` (fnmatch patterns) or with devices of one of
    ``dra_drivers``. Accelerators are always counted by ``resources`` and the drivers (a
    node's devices are handed in, counted from the ResourceSlices).
    """

    resources: tuple[str, ...] = DEFAULT_RESOURCES
    selector: Selector | None = None
    dra_drivers: tuple[str, ...] = DEFAULT_DRIVERS

    def describe(self) -> str:
        if self.selector is not None:
            return f"nodes matching {self.selector}"
        text = "nodes with allocatable " + " or ".join(self.resources) + " > 0"
        if self.dra_drivers:
            text += " or with " + " or ".join(self.dra_drivers) + " devices (DRA)"
        return text

    @property
    def label_selector(self) -> str | None:
        """The selector to send with a LIST (the server filters; we match again)."""
        return self.selector.text if self.selector is not None else None

    def accelerators(self, node: ScopedNode, devices: Devices = ()) -> tuple[tuple[str, int], ...]:
        """(resource, count > 0) of the node's allocatable resources in scope, and its DRA
        ``devices`` of the scope's drivers (under the driver's name), sorted."""
        # Here, not at the top: the exact quantities (fractions, decimal) are a few ms of
        # the start of every command that only defines the scope's flags.
        from labeler.core.quantity import parse_count

        out = list(self.counted(devices))
        for resource, quantity in node.allocatable.items():
            if not any(fnmatch.fnmatchcase(resource, p) for p in self.resources):
                continue
            count = parse_count(str(quantity))
            if count is None:
                log.warning(
                    "node=%s resource=%s unreadable allocatable quantity %r; counted as 0",
                    node.name,
                    resource,
                    quantity,
                )
                continue
            if count > 0:
                out.append((resource, count))
        return tuple(sorted(out))

    def counted(self, devices: Devices) -> Devices:
        """Those of a node's DRA ``devices`` that the scope counts (its drivers')."""
        return tuple((driver, n) for driver, n in devices if driver in self.dra_drivers and n > 0)

    def contains(self, node: ScopedNode, devices: Devices = ()) -> bool:
        if self.selector is not None:
            return self.selector.matches(node.labels)
        return bool(self.accelerators(node, devices))

    def split(
        self, nodes: Iterable[N], devices: Mapping[str, Devices] | None = None
    ) -> tuple[list[N], int]:
        """The nodes in scope (``devices``: node → its DRA devices), and how many were
        left out."""
        devices = devices or {}
        kept: list[N] = []
        left_out = 0
        for node in nodes:
            if self.contains(node, devices.get(node.name, ())):
                kept.append(node)
            else:
                left_out += 1
        return kept, left_out
