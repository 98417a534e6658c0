"""The per-pod filters kube-scheduler runs on each node of a placement, and its message.

In the default profile's order, the first plugin that rejects a node gives the node's
reason (``RunFilterPlugins`` stops there): NodeUnschedulable, TaintToleration,
NodeAffinity (nodeSelector and required node affinity), NodeResourcesFit (every
resource short, the pod slot included). A pod no node takes gets
``0/N nodes are available: <count> <reason>, ....`` with the reasons sorted as text
(``FitError.Error``), N being the nodes of the placement being tried. Preemption is not
run inside a pod-group cycle, so the message has no preemption part.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from labeler.core.capacity import Node
from labeler.core.node import Taint
from labeler.core.quantity import PODS
from labeler.sim.common.cluster import first_untolerated
from labeler.sim.kubesched.objects import GroupPod

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
# the node lifecycle controller taints a node that is not Ready
NOT_READY_TAINT = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")

UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
UNTOLERATED = "node(s) had untolerated taint(s)"
"""TaintToleration's reason in Kubernetes 1.37 (earlier releases named the taint)."""


def _taints(node: Node) -> tuple[Taint, ...]:
    if node.ready or any(t.key == NOT_READY_TAINT.key for t in node.taints):
        return node.taints
    return (*node.taints, NOT_READY_TAINT)


def static_reasons(node: Node, pod: GroupPod) -> list[str]:
    """The filters that depend on the pod and the node only (not on what runs there):
    NodeUnschedulable, TaintToleration, NodeAffinity; empty when all pass."""
    shape = pod.shape
    if node.unschedulable and not any(t.tolerates(UNSCHEDULABLE_TAINT) for t in shape.tolerations):
        return [UNSCHEDULABLE]
    if first_untolerated(_taints(node), shape.tolerations) is not None:
        return [UNTOLERATED]
    labels = node.labels
    if any(labels.get(k) != v for k, v in shape.node_selector.items()) or (
        shape.affinity is not None and not shape.affinity.matches(node.name, labels)
    ):
        return [AFFINITY]
    return []


def reasons(node: Node, free: Mapping[str, int], pod: GroupPod) -> list[str]:
    """Why ``node`` (with ``free`` left) cannot take ``pod``; empty when it can."""
    static = static_reasons(node, pod)
    if static:
        return static
    need = pod.shape.with_pod_slot()
    out = [TOO_MANY_PODS] if need[PODS] > free.get(PODS, 0) else []
    for res in sorted(need):
        if res != PODS and need[res] > 0 and need[res] > free.get(res, 0):
            out.append(f"Insufficient {res}")
    return out


def fit_error(nodes: int, counts: Counter[str]) -> str:
    """``FitError.Error()``: the reasons histogram, sorted as text."""
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"0/{nodes} nodes are available: {', '.join(parts)}."


def feasible(
    nodes: Sequence[Node], free: Mapping[str, Mapping[str, int]], pod: GroupPod
) -> tuple[list[Node], str]:
    """The nodes that pass every filter, and the FitError message when none does."""
    ok: list[Node] = []
    counts: Counter[str] = Counter()
    for node in nodes:
        why = reasons(node, free[node.name], pod)
        if why:
            counts.update(why)
        else:
            ok.append(node)
    return ok, "" if ok else fit_error(len(nodes), counts)
