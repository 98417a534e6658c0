"""The cluster as one pod-group cycle sees it: free capacity per node, what scoring
counts as requested, and the group pods already bound or assumed.

Assuming a pod and reverting it are exact inverses, as the scheduler assumes pods in its
snapshot while it tries a placement and reverts them before trying the next one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from labeler.core.capacity import Node
from labeler.core.quantity import PODS
from labeler.tas.kubesched.objects import SCORED_RESOURCES, GroupPod

Assignment = tuple[GroupPod, str]


@dataclass
class State:
    nodes: dict[str, Node]
    free: dict[str, dict[str, int]]
    requested: dict[str, dict[str, int]]
    """Per node, what its pods request as scoring counts it (CPU and memory non-zero)."""
    members: dict[tuple[str, str], list[Assignment]] = field(default_factory=dict)
    """Per (namespace, group name): its pods on nodes, bound or assumed."""

    @classmethod
    def build(cls, nodes: Sequence[Node], bound: Iterable[GroupPod]) -> State:
        state = cls(
            nodes={n.name: n for n in nodes},
            free={n.name: n.free() for n in nodes},
            requested={n.name: dict(n.used) for n in nodes},
        )
        for pod in bound:
            assert pod.node is not None
            state.members.setdefault((pod.namespace, pod.group), []).append((pod, pod.node))
        return state

    def node_list(self) -> list[Node]:
        return list(self.nodes.values())

    def add_usage(self, pod: GroupPod, node: str) -> None:
        """Count a bound pod the snapshot did not list (given only in the file)."""
        self._change(pod, node, +1)

    def assume(self, pod: GroupPod, node: str) -> None:
        self._change(pod, node, +1)
        self.members.setdefault((pod.namespace, pod.group), []).append((pod, node))

    def revert(self, assignments: Sequence[Assignment]) -> None:
        for pod, node in reversed(assignments):
            self._change(pod, node, -1)
            self.members[(pod.namespace, pod.group)].remove((pod, node))

    def apply(self, assignments: Iterable[Assignment]) -> None:
        for pod, node in assignments:
            self.assume(pod, node)

    def _change(self, pod: GroupPod, node: str, sign: int) -> None:
        free = self.free[node]
        for res, qty in pod.shape.with_pod_slot().items():
            free[res] = free.get(res, 0) - sign * qty
        req = self.requested[node]
        for res, qty in pod.shape.requests.items():
            if res not in SCORED_RESOURCES and res != PODS:
                req[res] = req.get(res, 0) + sign * qty
        for res in SCORED_RESOURCES:
            req[res] = req.get(res, 0) + sign * pod.scored[res]

    def scheduled(self, namespace: str, groups: Iterable[str]) -> list[Assignment]:
        """The pods of these groups on nodes."""
        out: list[Assignment] = []
        for g in groups:
            out += self.members.get((namespace, g), [])
        return out

    def labels(self, node: str) -> Mapping[str, str] | None:
        n = self.nodes.get(node)
        return None if n is None else n.labels
