"""Can this task go on this node? The allocate action's checks, in Volcano's order and words.

``allocate.predicate`` first compares the task's requests with the node's future idle
resources (idle plus releasing, minus pipelined) and stops at the first short resource
("Insufficient cpu"). Then the ``predicates`` plugin, when enabled: the node's pod count
against its ``pods`` allocatable ("node(s) pod number exceeded"; a node without ``pods`` in
its allocatable takes no pod at all), then the first failing of NodeUnschedulable, NodeAffinity
(nodeSelector and required node affinity) and TaintToleration, as kube-scheduler words them.
Volcano ignores a node's Ready condition: what keeps pods off a NotReady node is the
``node.kubernetes.io/not-ready`` taint the node lifecycle controller puts on it, which is
assumed here when the snapshot shows a NotReady node without it.

Node ports, pod (anti-)affinity, topology spread, volumes and DRA are not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from labeler.core.capacity import Node
from labeler.core.node import Taint
from labeler.sim.common.cluster import Toleration, first_untolerated
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.model import Task

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
POD_NUMBER = "node(s) pod number exceeded"
WAS_UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def effective_taints(node: Node) -> tuple[Taint, ...]:
    """The node's taints, with the not-ready taint a NotReady node carries in a real
    cluster (the node lifecycle controller's TaintNodesByCondition)."""
    if node.ready or any(t.key in (NOT_READY, UNREACHABLE) for t in node.taints):
        return node.taints
    return (*node.taints, Taint(NOT_READY, "", "NoSchedule"))


def taint_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


@dataclass(frozen=True)
class Switches:
    """The predicates plugin and its arguments (``predicate.NodeAffinityEnable``, …)."""

    enabled: bool = True
    node_affinity: bool = True
    taints: bool = True


def _tolerates(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def static_reason(task: Task, node: Node, switches: Switches) -> str | None:
    """The first stable filter that fails (they abort), or None: these never change
    while a cycle places pods, so they are computed once per task shape and node."""
    if not switches.enabled:
        return None
    if node.unschedulable and not _tolerates(task.tolerations, UNSCHEDULABLE_TAINT):
        return WAS_UNSCHEDULABLE
    if switches.node_affinity:
        labels = node.labels
        if any(labels.get(k) != v for k, v in task.node_selector.items()):
            return AFFINITY
        if task.affinity is not None and not task.affinity.matches(node.name, labels):
            return AFFINITY
    if switches.taints:
        taint = first_untolerated(effective_taints(node), task.tolerations)
        if taint is not None:
            return taint_reason(taint)
    return None


class StaticFilter:
    """``static_reason`` memoised per (task shape, node)."""

    def __init__(self, switches: Switches) -> None:
        self.switches = switches
        self._cache: dict[object, dict[str, str | None]] = {}

    def reason(self, task: Task, node: Node) -> str | None:
        return self.for_task(task)(node)

    def for_task(self, task: Task) -> Callable[[Node], str | None]:
        """The reason function for one task's shape (its cache looked up once)."""
        cache = self._cache.setdefault(shape_key(task), {})
        switches = self.switches

        def reason(node: Node) -> str | None:
            if node.name not in cache:
                cache[node.name] = static_reason(task, node, switches)
            return cache[node.name]

        return reason


def shape_key(task: Task) -> object:
    return (tuple(sorted(task.node_selector.items())), task.affinity, task.tolerations)


def fit_reasons(
    request: Mapping[str, int],
    future_idle: Mapping[str, int],
    pods_room: bool,
    static: str | None,
    switches: Switches,
) -> list[str]:
    """Why the task does not fit the node now ([] when it does)."""
    short = R.insufficient(request, future_idle)
    if short:
        return [f"Insufficient {short[0]}"]
    out = []
    if switches.enabled and not pods_room:
        out.append(POD_NUMBER)
    if static is not None:
        out.append(static)
    return out


@dataclass
class FitErrors:
    """Per node, why a task fit nowhere (``api.FitErrors``), in Volcano's words."""

    nodes: dict[str, list[str]] = field(default_factory=dict)
    hypernode: str = ""
    err: str = ""

    def message(self) -> str:
        base = self.err or f"0/{len(self.nodes)} nodes are unavailable"
        if not self.nodes:
            return base
        counts: dict[str, int] = {}
        for reasons in self.nodes.values():
            for r in reasons:
                counts[r] = counts.get(r, 0) + 1
        text = f"{base}: {', '.join(sorted(f'{n} {r}' for r, n in counts.items()))}."
        return f"In hyperNode {self.hypernode}: {text}" if self.hypernode else text
