"""What the audit keeps of one node: its level values, who set them, its accelerators.

A Node object is a few kilobytes; these facts are a few hundred bytes. The exporter keeps
only facts (10,000 nodes fit in a few megabytes) and decides from them whether a watch
event changed anything at all — most node updates are status heartbeats that do not.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from labeler.audit.selector import Selector
from labeler.model import Placement, Topology
from labeler.node import NodeInfo
from labeler.quantity import parse_count

log = logging.getLogger(__name__)

DEFAULT_RESOURCES: tuple[str, ...] = ("nvidia.com/gpu", "huawei.com/Ascend*")


@dataclass(frozen=True)
class Scope:
    """Which nodes the audit looks at.

    With a selector, every node it matches; otherwise every node with a positive
    allocatable count of one of ``resources`` (fnmatch patterns). Accelerators are always
    counted by ``resources``.
    """

    resources: tuple[str, ...] = DEFAULT_RESOURCES
    selector: Selector | None = None

    def describe(self) -> str:
        if self.selector is not None:
            return f"nodes matching {self.selector}"
        return "nodes with allocatable " + " or ".join(self.resources) + " > 0"

    def accelerators(self, node: NodeInfo) -> tuple[tuple[str, int], ...]:
        out = []
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


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """One in-scope node, reduced to what the audit needs.

    The placement is built once per watch event, not once per recomputation.
    """

    placement: Placement  # level values widest first (None = missing); tree label in extra
    foreign: tuple[str, ...]  # topology keys present on the node but not owned by us
    accelerators: tuple[tuple[str, int], ...]  # (resource, allocatable count > 0)

    @property
    def name(self) -> str:
        return self.placement.node


def node_facts(topology: Topology, scope: Scope, node: NodeInfo) -> NodeFacts | None:
    """The node's facts, or None when it is out of scope."""
    accelerators = scope.accelerators(node)
    if scope.selector is not None:
        if not scope.selector.matches(node.labels):
            return None
    elif not accelerators:
        return None
    labels: Mapping[str, str] = node.labels
    keys: Sequence[str] = topology.keys
    extra: dict[str, str] = {}
    if topology.tree_label:
        keys = (topology.tree_label, *keys)
        if topology.tree_label in labels:
            extra[topology.tree_label] = labels[topology.tree_label]
    owned = node.owned
    return NodeFacts(
        placement=Placement(
            node=node.name, values=tuple(labels.get(k) for k in topology.keys), extra=extra
        ),
        foreign=tuple(k for k in keys if k in labels and k not in owned),
        accelerators=accelerators,
    )
