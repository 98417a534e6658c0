"""How many copies of the gang the best HyperNode of each tier could hold, now and empty.

A copy is the gang placed the way the allocate action places it inside one HyperNode (its
sub-groups in their own HyperNodes of their tiers, every predicate applied), taking the
first node that fits instead of the best-scored one, until it is ready; copies are added
until one no longer fits. "Empty" keeps only DaemonSet and static pods on the nodes. The
HyperNodes of a tier are tried largest first by what their free resources could hold at
most, so a tier of thousands costs a handful of placements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from labeler.sim.volcano import resources as R
from labeler.sim.volcano.allocate import Allocator
from labeler.sim.volcano.ascend import MultiLevel
from labeler.sim.volcano.conf import SchedulerConf
from labeler.sim.volcano.cycle import Cycle
from labeler.sim.volcano.hypernodes import TOP, HyperNodeTree, tier_name_of
from labeler.sim.volcano.model import FAILED, PENDING, SUCCEEDED, Gang, Task
from labeler.sim.volcano.session import JobState, NodeState

LIMIT = 100  # copies are counted up to this many ("100+")
PLACEMENTS = 2000  # …and up to about this many pods placed per HyperNode counted


@dataclass(frozen=True)
class TierRow:
    tier: int
    name: str  # the tierName, "" without one
    hypernodes: int
    best_now: str
    now: int
    best_empty: str
    empty: int
    limit: int = LIMIT  # copies were counted up to this many

    @property
    def is_top(self) -> bool:
        return self.best_now == TOP or self.best_empty == TOP or self.hypernodes == 0


def fresh(gang: Gang) -> Gang:
    """The gang as if just created: every live pod pending, no job-level topology (the
    HyperNode it is counted in is its bound)."""
    tasks = tuple(
        replace(t, status=PENDING, node="")
        for t in gang.tasks
        if t.status not in (SUCCEEDED, FAILED)
    )
    return Gang(replace(gang.podgroup, network_topology=None), tasks, gang.origin)


def _need(tasks: Sequence[Task], count: int) -> dict[str, int]:
    """A lower bound of what a ready copy takes: per resource, the ``count`` smallest."""
    keys = {k for t in tasks for k in t.requests}
    return {k: sum(sorted(t.requests.get(k, 0) for t in tasks)[:count]) for k in keys}


class CopyCounter:
    """Copies of one gang in HyperNodes, over node states made on demand."""

    def __init__(
        self,
        conf: SchedulerConf,
        tree: HyperNodeTree,
        states: dict[str, NodeState],
        gang: Gang,
        multilevel: MultiLevel | None = None,
    ) -> None:
        self.conf, self.tree, self.gang = conf, tree, fresh(gang)
        self.states = states
        self.multilevel = multilevel
        tasks = [t for t in self.gang.tasks if not R.is_empty(t.requests)]
        self.min = max(min(self.gang.podgroup.min_member, len(tasks)), 1) if tasks else 0
        self.need = _need(tasks, self.min) if tasks else {}
        self._bounds: dict[str, int] = {}
        self._need_dims = [(k, v) for k, v in sorted(self.need.items()) if v > 0]
        self._rows: dict[str, tuple[int, ...]] | None = None

    def bound(self, hn: str, limit: int) -> int:
        """At most this many copies fit the free resources and pod slots of ``hn``."""
        if not self.min:
            return 0
        got = self._bounds.get(hn)
        if got is None:
            per = self._per_node()
            sums = [0] * (len(self._need_dims) + 1)
            for n in self.tree[hn].nodes:
                row = per.get(n)
                if row is not None:
                    for i, v in enumerate(row):
                        sums[i] += v
            got = sums[0] // self.min
            for (_, need), free in zip(self._need_dims, sums[1:], strict=True):
                got = min(got, max(free, 0) // need)
            self._bounds[hn] = got
        return min(got, limit)

    def _per_node(self) -> dict[str, tuple[int, ...]]:
        """Per node: free pod slots, then the free amount of each resource a copy needs."""
        if self._rows is None:
            dims = self._need_dims
            self._rows = {
                name: (
                    max(ns.max_pods - ns.pods, 0),
                    *(
                        ns.idle.get(k, 0) + ns.releasing.get(k, 0) - ns.pipelined.get(k, 0)
                        for k, _ in dims
                    ),
                )
                for name, ns in self.states.items()
            }
        return self._rows

    def copies(self, hn: str, limit: int) -> int:
        names = self.tree[hn].nodes
        states = {n: _copy(self.states[n]) for n in names if n in self.states}
        cy = Cycle(self.conf, self.tree, states, None, scores=False)
        cursor: dict[object, int] = {}  # shared by the copies: nodes only fill up
        count = 0
        while count < limit:
            job = JobState(self.gang.podgroup, self.gang.tasks)
            alloc = Allocator(cy, job, first_fit=True, multilevel=self.multilevel, cursor=cursor)
            alloc.run(root=hn)
            if not alloc.committed or not cy.job_ready(job):
                return count
            count += 1
        return count

    def best(self, hypernodes: Sequence[str], limit: int) -> tuple[str, int]:
        """The HyperNode holding the most copies, and how many (first of equals)."""
        ranked = sorted(hypernodes, key=lambda h: (-self.bound(h, limit), h))
        best_name, best = (ranked[0] if ranked else ""), 0
        for hn in ranked:
            if self.bound(hn, limit) <= best:
                break
            got = self.copies(hn, limit)
            if got > best:
                best_name, best = hn, got
        return best_name, best


def _copy(ns: NodeState) -> NodeState:
    out = NodeState.__new__(NodeState)
    out.node, out.name = ns.node, ns.name
    out.idle, out.releasing = dict(ns.idle), dict(ns.releasing)
    out.pipelined, out.used = dict(ns.pipelined), dict(ns.used)
    out.pods, out.max_pods = ns.pods, ns.max_pods
    return out


def tier_table(
    gang: Gang,
    conf: SchedulerConf,
    tree: HyperNodeTree,
    now: dict[str, NodeState],
    empty: dict[str, NodeState],
    limit: int = LIMIT,
    multilevel: MultiLevel | None = None,
) -> list[TierRow]:
    """One row per tier (the cluster top last)."""
    limit = max(1, min(limit, PLACEMENTS // max(len(gang.tasks), 1)))
    counters = (
        CopyCounter(conf, tree, now, gang, multilevel),
        CopyCounter(conf, tree, empty, gang, multilevel),
    )
    rows = []
    for tier in tree.tiers:
        names = tree.by_tier[tier]
        real = [n for n in names if n != TOP]
        (a, n), (b, e) = (c.best(names, limit) for c in counters)
        rows.append(TierRow(tier, tier_name_of(tree, tier), len(real), a, n, b, e, limit))
    return rows


def smallest(rows: Sequence[TierRow], *, empty: bool) -> TierRow | None:
    return next((r for r in rows if (r.empty if empty else r.now) > 0), None)
