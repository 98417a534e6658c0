"""The cluster as one pod-group cycle sees it: free capacity per node, what scoring
counts as requested, and the group pods already bound or assumed.

Assuming a pod and reverting it are exact inverses, as the scheduler assumes pods in its
snapshot while it tries a placement and reverts them before trying the next one. Every
node carries a generation: a number that changes when the node's usage does and comes back
when the change is reverted, so what was found for a node at one generation holds whenever
the node is at it again (``pick`` and ``schedule`` reuse it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from labeler.core.capacity import Node
from labeler.core.quantity import PODS
from labeler.sim.kubesched.objects import SCORED_RESOURCES, Assignment, Group, GroupPod
from labeler.sim.kubesched.results import GroupResult

Prefer = Callable[[GroupPod, tuple[str, ...], "State"], str]
"""Which of the nodes tied for a pod's top score to take, in place of the first by name:
kube-scheduler draws one at random; the oracle's comparison replays its draws."""
PreferDomain = Callable[[Group, tuple[str | None, ...]], str | None]
"""Which of a group's placements tied for the best score to keep, in place of the first
by name (kube-scheduler's pick among them is as random)."""


@dataclass
class Caches:
    """What one advise run learns, shared by every placement: per (pod key, node) whether
    the node-only filters pass, and the score (None: rejected) at a node generation (see
    ``pick``); per try of a group on a placement its outcome (see ``memo``). ``remember``
    False recomputes everything (the tests compare the two)."""

    remember: bool = True
    prefer: Prefer | None = None
    prefer_domain: PreferDomain | None = None
    static: dict[tuple[Hashable, str], bool] = field(default_factory=dict)
    dynamic: dict[tuple[Hashable, str, int], int | None] = field(default_factory=dict)
    shapes: dict[Group, Hashable] = field(default_factory=dict)
    tries: dict[Hashable, tuple[Group, GroupResult]] = field(default_factory=dict)
    grouped: dict[tuple[str, int], tuple[list[Node], dict[str, list[Node]]]] = field(
        default_factory=dict
    )
    """Per (topology key, node list): its nodes by value of the key, values in name order.
    Node lists are the cluster's (``State.every``) or an entry of this cache, so they live
    as long as the cache and their ids name them."""


@dataclass
class State:
    nodes: dict[str, Node]
    free: dict[str, dict[str, int]]
    """Per node, allocatable minus what its pods request (the filters' view)."""
    requested: dict[str, dict[str, int]]
    """Per node, what its pods request as NodeResourcesFit scores it: CPU and memory with
    the non-zero defaults (``NonZeroRequested``), other resources as requested."""
    members: dict[tuple[str, str], list[Assignment]] = field(default_factory=dict)
    """Per (namespace, group name): its pods on nodes, bound or assumed."""
    gen: dict[str, int] = field(default_factory=dict)
    caches: Caches = field(default_factory=Caches)
    _undo: dict[str, list[int]] = field(default_factory=dict)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @classmethod
    def build(
        cls,
        nodes: Sequence[Node],
        bound: Iterable[GroupPod],
        scoring: Mapping[str, Mapping[str, int]],
    ) -> State:
        """``scoring``: per node, the non-zero CPU/memory of the pods running there."""
        requested = {}
        for n in nodes:
            req = {r: q for r, q in n.used.items() if r not in SCORED_RESOURCES and r != PODS}
            for res in SCORED_RESOURCES:
                req[res] = scoring.get(n.name, {}).get(res, 0)
            requested[n.name] = req
        state = cls(
            nodes={n.name: n for n in nodes},
            free={n.name: n.free() for n in nodes},
            requested=requested,
            gen=dict.fromkeys((n.name for n in nodes), 0),
        )
        for pod in bound:
            assert pod.node is not None
            state.members.setdefault((pod.namespace, pod.group), []).append((pod, pod.node))
        return state

    @cached_property
    def every(self) -> list[Node]:
        """All nodes, one list (``Caches.grouped`` knows it by its id)."""
        return list(self.nodes.values())

    def grouped(self, nodes: list[Node], key: str) -> dict[str, list[Node]]:
        """``nodes`` by value of ``key`` (nodes without it left out), values in name order."""
        cache = self.caches.grouped
        hit = cache.get((key, id(nodes)))
        if hit is not None and hit[0] is nodes:
            return hit[1]
        by: dict[str, list[Node]] = {}
        for n in nodes:
            value = n.labels.get(key)
            if value is not None:
                by.setdefault(value, []).append(n)
        ordered = {v: by[v] for v in sorted(by)}
        cache[(key, id(nodes))] = (nodes, ordered)
        return ordered

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
        if sign > 0:
            self._undo.setdefault(node, []).append(self.gen[node])
            self.gen[node] = next(self._ids)
        else:
            self.gen[node] = self._undo[node].pop()
        free = self.free[node]
        for res, qty in pod.need.items():
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
