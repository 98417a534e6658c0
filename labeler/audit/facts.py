"""What the audit keeps of one node: its level values, who set them, its accelerators.

A Node object is a few kilobytes; these facts are a few hundred bytes. The exporter keeps
only facts (10,000 nodes fit in a few megabytes) and decides from them whether a watch
event changed anything at all — most node updates are status heartbeats that do not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from labeler.model import NodePosition, Topology, level_values
from labeler.node import NodeInfo
from labeler.scope import Scope


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """One in-scope node, reduced to what the audit needs.

    The position is built once per watch event, not once per recomputation.
    """

    position: NodePosition  # level values widest first (None = missing); tree label in extra
    foreign: tuple[str, ...]  # topology keys present on the node but not owned by us
    accelerators: tuple[tuple[str, int], ...]  # (resource, allocatable count > 0)

    @property
    def name(self) -> str:
        return self.position.node


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
        position=NodePosition(
            node=node.name, values=level_values(topology.keys, labels), extra=extra
        ),
        foreign=tuple(k for k in keys if k in labels and k not in owned),
        accelerators=accelerators,
    )
