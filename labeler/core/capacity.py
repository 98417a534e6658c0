"""What a node can hold: its allocatable capacity and what bound pods use of it.

Capacities are integers in the simulators' units (``labeler.core.quantity``: milli-CPU,
bytes, counts). The topology-aware simulators start from ``Node.free``, and the map
shows the same numbers, so what ``map`` draws and what ``advise`` counts cannot differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import InputError
from labeler.core.node import NodeInfo, Taint
from labeler.core.quantity import QuantityError, quantity_units


@dataclass(frozen=True)
class Node:
    """One node as the simulator needs it. Capacities are in Kueue units (see quantity)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    used: Mapping[str, int] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    unschedulable: bool = False
    resident: Mapping[str, int] = field(default_factory=dict)
    """Part of ``used`` that stays when the cluster drains: DaemonSet and static pods."""

    def free(self, *, empty: bool = False) -> dict[str, int]:
        """Allocatable minus what pods use; on an "empty" cluster, minus only what
        DaemonSet and static pods use (they come back on every node)."""
        out = dict(self.allocatable)
        for res, amount in (self.resident if empty else self.used).items():
            out[res] = out.get(res, 0) - amount
        return out


def _units(resource: str, raw: Any, where: str) -> int:
    try:
        return quantity_units(resource, str(raw))
    except QuantityError as e:
        raise InputError(f"{where}: {resource}: {e}") from e


def resource_map(raw: Any, where: str) -> dict[str, int]:
    """A ``{resource: quantity}`` mapping in the simulators' units; ``where`` names it in
    errors."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping of resource name to quantity")
    return {str(k): _units(str(k), v, where) for k, v in raw.items()}


def node_from_info(info: NodeInfo, where: str) -> Node:
    """A NodeInfo (from the API or a snapshot) → Node in Kueue units, without usage.

    ``where`` names the node in errors (a bad allocatable quantity is an InputError).
    """
    return Node(
        name=info.name,
        labels={str(k): "" if v is None else str(v) for k, v in info.labels.items()},
        allocatable=resource_map(info.allocatable, f"{where}: allocatable"),
        taints=info.taints,
        ready=info.ready,
        unschedulable=info.unschedulable,
    )


def node_from_object(obj: Mapping[str, Any], where: str = "node") -> Node:
    """A Node object (dict) → Node, without usage; the fields the simulator needs are
    checked first, so a hand-written snapshot gets an error naming the item."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: a Node needs metadata.name")
    if not isinstance(meta.get("labels") or {}, Mapping):
        raise InputError(f"{where} ({name}): metadata.labels must be a mapping")
    for part in ("spec", "status"):
        if not isinstance(obj.get(part) or {}, Mapping):
            raise InputError(f"{where} ({name}): {part} must be a mapping")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    for part, value in (
        ("spec.taints", spec.get("taints")),
        ("status.conditions", status.get("conditions")),
    ):
        if not isinstance(value or [], list):
            raise InputError(f"{where} ({name}): {part} must be a list")
    allocatable = status.get("allocatable")
    if allocatable is not None and not isinstance(allocatable, Mapping):
        raise InputError(
            f"{where} ({name}): allocatable: expected a mapping of resource name to quantity"
        )
    return node_from_info(NodeInfo.from_dict(obj), f"{where} ({name})")
