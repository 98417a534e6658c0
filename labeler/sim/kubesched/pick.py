"""Which node of a placement each pod of a group takes, fast.

kube-scheduler runs the filters and scores on every node of the placement for every pod.
The answer is the same here, computed with less work: the taint, unschedulable and node
affinity/selector checks depend only on the pod and the node, so they are kept per pod key
(``GroupPod.key``) and node; the resource check and the node score depend on the node's
usage too, so they are kept per node generation (``State.gen``); and for a run of pods with
the same key, only the node the previous pod took has changed, so the best node comes from
a heap. The heap orders by score, then node name: the first name among the best scores,
the node the simulator takes where kube-scheduler draws at random (``selectHost`` samples
one of the nodes of the top score); every node of that score is kept as the pick's tie.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence

from labeler.core.capacity import Node
from labeler.core.quantity import PODS
from labeler.sim.kubesched.filters import feasible, static_reasons
from labeler.sim.kubesched.objects import GroupPod
from labeler.sim.kubesched.score import node_score
from labeler.sim.kubesched.state import Caches, State

MAX_CACHED = 400_000
"""Entries kept per cache before it is emptied (a bound on memory, not a tuning knob)."""


def _passes_static(caches: Caches, node: Node, pod: GroupPod) -> bool:
    key = (pod.key, node.name)
    ok = caches.static.get(key)
    if ok is None:
        ok = not static_reasons(node, pod)
        caches.static[key] = ok
    return ok


def evaluate(caches: Caches, state: State, node: Node, pod: GroupPod) -> int | None:
    """The node's score for ``pod``, or None when a filter rejects the node."""
    key = (pod.key, node.name, state.gen[node.name])
    if caches.remember and key in caches.dynamic:
        return caches.dynamic[key]
    score: int | None = None
    if _passes_static(caches, node, pod):
        free = state.free[node.name]
        need = pod.shape.requests
        fits = free.get(PODS, 0) >= need.get(PODS, 0) + 1 and all(
            q <= 0 or q <= free.get(r, 0) for r, q in need.items() if r != PODS
        )
        if fits:
            score = node_score(node, state.requested[node.name], free, pod)
    if len(caches.dynamic) >= MAX_CACHED:
        caches.dynamic.clear()
    caches.dynamic[key] = score
    return score


class Picker:
    """Picks a node for each pod tried on one placement, in order."""

    def __init__(self, nodes: Sequence[Node], state: State) -> None:
        self.nodes = nodes
        self.state = state
        self.caches = state.caches
        self.key: Hashable = None
        self.heap: list[tuple[int, str, int]] = []
        self.taken: Node | None = None
        self.failed = ""
        self.tied: tuple[str, ...] = ()
        """The nodes of the last pick's top score, its own included, when more than one."""

    def _push(self, node: Node, pod: GroupPod) -> None:
        score = evaluate(self.caches, self.state, node, pod)
        if score is not None:
            heapq.heappush(self.heap, (-score, node.name, self.state.gen[node.name]))

    def pick(self, pod: GroupPod) -> tuple[str | None, str]:
        """The node ``pod`` takes (the caller assumes it there), or None and the scheduler's
        message when no node of the placement passes the filters."""
        if pod.key != self.key or self.key is None:
            self.key, self.heap, self.taken, self.failed = pod.key, [], None, ""
            for node in self.nodes:
                self._push(node, pod)
        elif self.failed:
            self.tied = ()
            return None, self.failed  # nothing changed since the last pod found no node
        elif self.taken is not None:
            self._push(self.taken, pod)
        gen = self.state.gen
        while self.heap and self.heap[0][2] != gen[self.heap[0][1]]:
            heapq.heappop(self.heap)  # evaluated before the node changed
        self.tied = ()
        if not self.heap:
            self.taken = None
            self.failed = feasible(self.nodes, self.state.free, pod)[1]
            return None, self.failed
        best = [heapq.heappop(self.heap)]
        while self.heap and self.heap[0][0] == best[0][0]:
            entry = heapq.heappop(self.heap)
            if entry[2] == gen[entry[1]]:
                best.append(entry)
        name = best[0][1]
        self.tied = tuple(e[1] for e in best) if len(best) > 1 else ()
        prefer = self.caches.prefer
        if self.tied and prefer is not None:
            name = prefer(pod, self.tied, self.state)
        for entry in best:
            if entry[1] != name:
                heapq.heappush(self.heap, entry)
        self.taken = self.state.nodes[name]
        return name, ""
