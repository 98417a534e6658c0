"""Place every PodSet of one Workload as Kueue's TAS admission does, and say why not.

Kueue (``FindTopologyAssignmentsForFlavor``) groups the PodSets by ``podset-group-name``
(ungrouped ones alone), keeps the order of first appearance, and places group after group;
each later group sees what the earlier ones took, and the first group that does not fit
gives the Workload's message. In a group of two, the PodSet with more pods is the workers
and the other (one pod) the leader, placed together (``findLeaderAndWorkers``).

We go on past the first failure so that every PodSet gets an answer; those Kueue never
reached are marked ``reached=False``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from labeler.core.quantity import PODS
from labeler.sim.kueue.assign import Job, Mode, NodeAssignment, Outcome
from labeler.sim.kueue.gates import DEFAULT_GATES, Gates
from labeler.sim.kueue.place import simulate
from labeler.sim.kueue.tree import Capacity, ExclusionStats, Tree, leaf_capacity
from labeler.sim.kueue.workload import PodSet, Workload, to_job


@dataclass(frozen=True)
class PodSetResult:
    """One PodSet's answer. Level fields are tree level indexes."""

    podset: PodSet
    role: str  # "leader", "workers" (in a group) or "" (alone)
    outcome: Outcome
    job: Job | None
    narrowest_now: int | None
    narrowest_empty: int | None
    stats: ExclusionStats
    reached: bool = True


@dataclass(frozen=True)
class WorkloadResult:
    workload: Workload
    podsets: tuple[PodSetResult, ...]

    @property
    def fits(self) -> bool:
        return all(r.outcome.fits for r in self.podsets)

    @property
    def message(self) -> str:
        """Kueue's message for the Workload: the first failing PodSet's."""
        return next((r.outcome.message for r in self.podsets if not r.outcome.fits), "")


def groups(podsets: Sequence[PodSet]) -> list[list[PodSet]]:
    """PodSets grouped by group name, in order of first appearance."""
    order: list[str] = []
    by_key: dict[str, list[PodSet]] = {}
    for i, ps in enumerate(podsets):
        key = f"group:{ps.request.group}" if ps.request.group else f"#{i}"
        if key not in by_key:
            order.append(key)
            by_key[key] = []
        by_key[key].append(ps)
    return [by_key[k] for k in order]


def leader_and_workers(group: Sequence[PodSet]) -> tuple[PodSet | None, PodSet]:
    """``findLeaderAndWorkers``: the first is the workers unless the second has more pods."""
    if len(group) < 2:
        return None, group[0]
    workers, leader = group[0], group[1]
    if leader.count > workers.count:
        workers, leader = leader, workers
    return leader, workers


def _leaf_id(tree: Tree, a: NodeAssignment) -> str:
    return a.values[-1] if tree.hostname_leaves else ",".join(a.values)


def add_usage(
    used: dict[str, dict[str, int]],
    tree: Tree,
    assignment: Sequence[NodeAssignment],
    requests: Mapping[str, int],
) -> None:
    """Add what ``assignment`` takes (requests × count plus a pod slot each) per leaf."""
    for a in assignment:
        leaf = used.setdefault(_leaf_id(tree, a), {})
        for res, v in requests.items():
            leaf[res] = leaf.get(res, 0) + v * a.count
        leaf[PODS] = leaf.get(PODS, 0) + a.count


def narrowest(tree: Tree, capacity: Capacity, job: Job) -> int | None:
    """The narrowest level at which one domain holds the whole group as a required
    request (with the leader, when there is one)."""
    lowest = job.slices[0].level if job.slices else tree.depth - 1
    for lvl in range(lowest, -1, -1):
        if simulate(tree, capacity, replace(job, mode=Mode.REQUIRED, level=lvl)).fits:
            return lvl
    return None


def _copy(used: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    return {k: dict(v) for k, v in used.items()}


def place_workload(
    tree: Tree,
    workload: Workload,
    held: Mapping[str, Mapping[str, int]] | None = None,
    gates: Gates = DEFAULT_GATES,
) -> WorkloadResult:
    """Every PodSet's verdict, assignment and narrowest fitting level, now (with ``held``,
    the capacity admitted Workloads hold) and on an empty cluster, under Kueue's ``gates``."""
    now_used = _copy(held or {})
    empty_used: dict[str, dict[str, int]] = {}
    reached = True
    results: list[PodSetResult] = []
    for group in groups(workload.podsets):
        leader, workers = leader_and_workers(group)
        job = to_job(workers, tree.keys, leaders=1 if leader else 0)
        lshape = leader.shape if leader else None
        now = leaf_capacity(tree, workers.shape, used=now_used, leader=lshape)
        if isinstance(job, str):
            outcome = Outcome(fits=False, message=job)
            parts: list[tuple[PodSet, str, Outcome]] = [(workers, "workers", outcome)]
            if leader:
                parts.insert(0, (leader, "leader", outcome))
            for ps, role, out in parts:
                results.append(
                    PodSetResult(
                        ps, role if leader else "", out, None, None, None, now.stats, reached
                    )
                )
            reached = False
            continue
        outcome = simulate(tree, now, job, gates)
        narrow_now = narrowest(tree, now, job)
        empty = leaf_capacity(tree, workers.shape, empty=True, used=empty_used, leader=lshape)
        narrow_empty = narrowest(tree, empty, job)
        empty_outcome = simulate(tree, empty, job, gates)
        if outcome.fits:
            add_usage(now_used, tree, outcome.assignment, workers.shape.requests)
            if leader:
                add_usage(now_used, tree, outcome.leader_assignment, leader.shape.requests)
        if empty_outcome.fits:
            add_usage(empty_used, tree, empty_outcome.assignment, workers.shape.requests)
            if leader:
                add_usage(empty_used, tree, empty_outcome.leader_assignment, leader.shape.requests)
        if leader:
            lead_out = replace(outcome, assignment=outcome.leader_assignment, leader_assignment=())
            results.append(
                PodSetResult(
                    leader, "leader", lead_out, job, narrow_now, narrow_empty, now.stats, reached
                )
            )
        work_out = replace(outcome, leader_assignment=())
        results.append(
            PodSetResult(
                workers,
                "workers" if leader else "",
                work_out,
                job,
                narrow_now,
                narrow_empty,
                now.stats,
                reached,
            )
        )
        if not outcome.fits:
            reached = False
    order = {id(ps): i for i, ps in enumerate(workload.podsets)}
    results.sort(key=lambda r: order[id(r.podset)])
    return WorkloadResult(workload, tuple(results))
