"""kube-scheduler's pod-group cycle (``PodGroupSchedulingAlgorithm``), simulated.

For a group the TopologyPlacement plugin makes one candidate placement per distinct value
of ``schedulingConstraints.topology[0].key`` among the nodes it may use (all nodes, or
the parent CompositePodGroup's chosen domain); a node without the key is in no placement;
a group some of whose pods are already bound is held to their domain. No constraint means
one placement with every node. On each placement the group's pending pods are tried one by
one (filters, then the best-scoring node, assumed for the next pod), and the GangScheduling
plugin's PlacementFeasible check runs before the first pod and after each: ``minCount
(M) cannot be satisfied: S scheduled, R remaining`` stops the placement, ``not yet
satisfied`` goes on. A CompositePodGroup does the same with its child groups, counting
successful children against ``minGroupCount``, each child placed inside the parent's
placement. Of the feasible placements the best-scoring one is kept (``score``); when none is
feasible the group gets ``0/N placements are available, first placement status: ...``
(kube-scheduler tries the placements in no set order and quotes whichever came first; the
simulator tries them in name order). When there is no placement at all (no node of the
scope has the key, or the bound pods' domain lies outside the parent's) the framework says
``no feasible placements found``; a child's scheduler error stops its parent with
``composite pod group evaluation failed due to child error: ...``.

A gang waits until ``minCount`` of its pods exist. A basic PodGroup goes through the same
cycle as a gang of minCount 1 (kube-scheduler 1.37 queues every member of a PodGroup as
one entity): all its pending pods are tried on each placement, and the best-scoring
placement takes them. Every assumed pod stays counted for the groups advised after it.
A hierarchy that fits with pods left over is tried again at once for them (``_again``),
and what that cycle says is what they end with.
Preemption is not modelled beyond its message: every pod has the default priority, so
DefaultPreemption finds no victim, and says so after the status of every group of a
hierarchy whose root does not fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from labeler.core.capacity import Node
from labeler.sim.kubesched import objects as ob
from labeler.sim.kubesched.held import HELD_ERROR, Held, held
from labeler.sim.kubesched.memo import remembered_try
from labeler.sim.kubesched.objects import Group, GroupPod, Objects
from labeler.sim.kubesched.pick import Picker
from labeler.sim.kubesched.results import GroupResult, Placement, PodResult
from labeler.sim.kubesched.score import FIT, PODS_COUNT, fit_placement_score, pods_count_scores
from labeler.sim.kubesched.state import Prefer, PreferDomain, State

GANG_WAITING = "waiting for minCount pods from a gang to appear in scheduling queue"
UNSCHEDULABLE = "pod group is unschedulable"
"""``errPodGroupUnschedulable``: a status made with it says it first (``Status.Reasons``)."""
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
"""What DefaultPreemption's PodGroupPostFilter adds to every group's status when the root
is unschedulable: every pod has the same (default) priority, so none is a victim."""
NO_PLACEMENTS = "no feasible placements found"
"""The framework's status when the placement generators produce no placement
(``RunPlacementGeneratePlugins``); TopologyPlacement itself returns an empty list."""
CHILD_ERROR = "composite pod group evaluation failed due to child error: "


def _gang_check(min_count: int, remaining: int, scheduled: int) -> tuple[bool, bool, str]:
    """GangScheduling.PlacementFeasible: (satisfied, go on, message)."""
    if remaining + scheduled < min_count:
        return (
            False,
            False,
            f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, "
            f"{remaining} remaining",
        )
    if scheduled < min_count:
        return (
            False,
            True,
            f"minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, "
            f"{remaining} remaining",
        )
    return True, True, ""


def _wrapped(reason: str) -> str:
    """A status made ``WithError(errPodGroupUnschedulable)`` with ``reason``."""
    return f"{UNSCHEDULABLE}, {reason}"


def _domains(
    group: Group, nodes: list[Node], state: State, objs: Objects
) -> tuple[list[tuple[str | None, list[Node]]], Held, str]:
    """TopologyPlacement.GeneratePlacements: (placements, what the running pods say, our
    note why there is none). ``Held.errors`` are scheduler errors; no placement without
    them is NO_PLACEMENTS (unschedulable)."""
    key = group.key
    if key is None:
        return [(None, nodes)], Held(), ""
    found = held(group, state, objs)
    if found.errors:
        return [], found, ""
    held_in = found.domains
    by = state.grouped(nodes, key)
    if held_in:
        by = {v: by[v] for v in held_in if v in by}
    if not by:
        where = "the cluster" if group.parent is None else "its parent's domain"
        note = f"no node in {where} has the label {key}"
        if held_in:
            note = f"its pods already run in {key}={next(iter(held_in))}, outside {where}"
        return [], found, note
    return list(by.items()), found, ""


def _pod_group_default(
    group: Group,
    todo: Sequence[GroupPod],
    nodes: list[Node],
    state: State,
) -> GroupResult:
    """podGroupSchedulingDefaultAlgorithm on one placement; leaves its pods assumed."""
    scheduled = len(state.scheduled(group.namespace, [group.name]))
    remaining = len(todo)
    ok, go_on, message = _gang_check(group.min_count, remaining, scheduled)
    result = GroupResult(group, ok=False)
    if not go_on:
        # refused before the first pod: the status is re-made with the group's error
        result.message, result.cause = _wrapped(message), UNSCHEDULABLE
        return result
    picker = Picker(nodes, state)
    for pod in todo:
        if not state.caches.remember:  # every pod on every node afresh, as upstream does
            picker = Picker(nodes, state)
        node, why = picker.pick(pod)
        if node is not None:
            state.assume(pod, node)
            result.assignments.append((pod, node))
            scheduled += 1
        result.pods.append(PodResult(pod, node, why, picker.tied))
        remaining -= 1
        ok, go_on, message = _gang_check(group.min_count, remaining, scheduled)
        if not go_on:
            break
    _settle(result, ok, go_on, message)
    return result


def _settle(result: GroupResult, ok: bool, go_on: bool, message: str) -> None:
    """The status a default algorithm ends with: the plugin's own when it stopped the loop,
    re-made with the group's error when minCount is still not satisfied (Wait)."""
    result.ok = ok
    if not go_on:
        result.message = result.cause = message
    elif not ok:
        result.message, result.cause = _wrapped(message), UNSCHEDULABLE


def _composite_default(group: Group, nodes: list[Node], state: State, objs: Objects) -> GroupResult:
    """compositePodGroupSchedulingDefaultAlgorithm: the children in turn, inside ``nodes``."""
    kids = ob.children(objs, group)
    scheduled, remaining = 0, len(kids)
    ok, go_on, message = _gang_check(group.min_count, remaining, scheduled)
    result = GroupResult(group, ok=False)
    for child in kids if go_on else ():
        sub = place(child, nodes, state, objs)
        result.children.append(sub)
        result.assignments += sub.assignments
        if sub.error:
            result.error = True
            result.message = result.cause = CHILD_ERROR + sub.cause
            return result
        remaining -= 1
        scheduled += sub.ok
        ok, go_on, message = _gang_check(group.min_count, remaining, scheduled)
        if not go_on:
            break
    # unlike a PodGroup's, a refusal before the first child keeps the plugin's status
    _settle(result, ok, go_on, message)
    return result


def _try(group: Group, nodes: list[Node], state: State, objs: Objects) -> GroupResult:
    """One placement tried; what it assumed is reverted, and kept only when it is feasible."""
    if group.kind == ob.COMPOSITE:
        result = _composite_default(group, nodes, state, objs)
    else:
        result = _pod_group_default(group, ob.pending(objs, group), nodes, state)
    state.revert(result.assignments)
    if not result.ok:
        result.assignments = []
    return result


def place(group: Group, nodes: list[Node], state: State, objs: Objects) -> GroupResult:
    """The placement algorithm for one (composite) group within ``nodes``; the best
    placement's pods stay assumed in ``state``."""
    under = ob.pod_groups_under(objs, group)
    candidates, found, note = _domains(group, nodes, state, objs)
    if found.errors:
        error, *others = found.errors
        if others:
            note = (
                "kube-scheduler meets the pods already running in no set order, so its "
                f"message may instead end: {'; '.join(o.removeprefix(HELD_ERROR) for o in others)}"
            )
        return GroupResult(
            group, ok=False, message=error, cause=error, error=True, note=note, alternatives=others
        )
    if not candidates:
        return GroupResult(group, ok=False, message=NO_PLACEMENTS, cause=NO_PLACEMENTS, note=note)
    tried: list[tuple[Placement, GroupResult]] = []
    for domain, members in candidates:
        if state.caches.remember:
            result = remembered_try(group, members, state, objs, _try)
        else:
            result = _try(group, members, state, objs)
        if result.error:
            return result
        tried.append((Placement(domain, len(members), result.ok, result.message), result))
        result.domain = domain
    infos = [p for p, _ in tried]
    good = [(p, r) for p, r in tried if r.ok]
    if not good:
        for info, result in tried:
            info.pods = _reported(result, len(tried), objs)
        first = tried[0][1]
        first.message = _wrapped(
            f"0/{len(tried)} placements are available, first placement status: {first.cause}"
        )
        first.cause = UNSCHEDULABLE
        first.domain, first.placements = None, infos
        return first
    best, tie = _best(good, candidates, state, under)
    best.placements, best.tie = infos, tie
    state.apply(best.assignments)
    return best


def _reported(result: GroupResult, count: int, objs: Objects) -> dict[str, list[str]]:
    """What the pods of a group none of whose ``count`` placements is feasible end with if
    kube-scheduler reports this try (the one a Go map walk met first): per pending pod,
    its message, and more where a group inside the try also had no feasible placement
    and may report any of its own."""
    status = f"0/{count} placements are available, first placement status: {result.cause}"
    as_first = replace(result, message=_wrapped(status), cause=UNSCHEDULABLE)
    out = {p.pod.ref: [p.message] for p in _outcomes(as_first, result.group, objs, None, "")}
    below = list(result.children)
    while below:
        child = below.pop()
        below += child.children
        for placement in child.placements:
            for pod, said in placement.pods.items():
                out.setdefault(pod, []).extend(m for m in said if m not in out[pod])
    return out


def _best(
    good: list[tuple[Placement, GroupResult]],
    candidates: Sequence[tuple[str | None, list[Node]]],
    state: State,
    under: Sequence[str],
) -> tuple[GroupResult, bool]:
    """findBestPlacement; one feasible placement is taken without scoring."""
    if len(good) == 1:
        return good[0][1], False
    members = dict(candidates)
    namespace = good[0][1].group.namespace
    already = len(state.scheduled(namespace, under))
    counts = pods_count_scores([already + len(r.assignments) for _, r in good])
    totals = []
    for (info, result), count in zip(good, counts, strict=True):
        if FIT not in result.known:  # an outcome remembered from an equal try has it
            nodes = members[info.domain]
            result.known[FIT] = fit_placement_score(nodes, result.assignments, state.requested)
        fit = result.known[FIT]
        info.scores = {PODS_COUNT: count, FIT: fit, "total": count + fit}
        totals.append(count + fit)
    top = max(totals)
    winners = [r for (_, r), t in zip(good, totals, strict=True) if t == top]
    best, prefer = winners[0], state.caches.prefer_domain
    if len(winners) > 1 and prefer is not None:
        chosen = prefer(best.group, tuple(r.domain for r in winners))
        best = next(r for r in winners if r.domain == chosen)
    return best, len(winners) > 1


def _pods_ready(group: Group, state: State, objs: Objects) -> bool:
    """isPGReady: the PodGroup has at least minCount pods (pending or on nodes)."""
    have = len(ob.pending(objs, group)) + len(state.scheduled(group.namespace, [group.name]))
    return have >= group.min_count


def _tree_ready(group: Group, state: State, objs: Objects) -> bool:
    """isCPGTreeReady: enough children are ready for minGroupCount."""
    ready = 0
    for child in ob.children(objs, group):
        if child.kind == ob.COMPOSITE:
            ready += _tree_ready(child, state, objs)
        else:
            ready += _pods_ready(child, state, objs)
    return ready >= group.min_count


def _waiting(root: Group, state: State, objs: Objects) -> str:
    """GangScheduling.PreEnqueue: why the group's pods are not even queued, or ''."""
    if root.kind == ob.COMPOSITE:
        if not _tree_ready(root, state, objs):
            return f'waiting for composite pod group "{root.name}" tree to meet quorum'
    elif root.gang and not _pods_ready(root, state, objs):
        return GANG_WAITING
    return ""


def schedule_root(root: Group, state: State, objs: Objects) -> GroupResult:
    """RunRootSchedulingAlgorithm for one hierarchy; its pods stay assumed in ``state``."""
    waiting = _waiting(root, state, objs)
    if waiting:
        return GroupResult(root, ok=False, message=waiting)
    result = place(root, state.every, state, objs)
    if result.ok and not result.assignments:
        # the framework wants at least one pod scheduled
        result.ok, result.message, result.cause = False, UNSCHEDULABLE, UNSCHEDULABLE
    return result


@dataclass
class Advice:
    """The answer: per hierarchy its result, per pending pod its node or why not."""

    results: list[GroupResult]
    pods: list[PodResult]

    @property
    def fits(self) -> bool:
        return bool(self.pods) and all(p.node for p in self.pods)

    @property
    def message(self) -> str:
        return next((p.message for p in self.pods if not p.node), "")


def _outcomes(
    result: GroupResult | None, group: Group, objs: Objects, above: GroupResult | None, after: str
) -> list[PodResult]:
    """Each pending pod of ``group``'s subtree, as ``submitPodGroupAlgorithmResult`` writes
    it. A group missing from the results, or successful under a failed parent, takes the
    parent's status with no pod tried (``completeCompositePodGroupAlgorithmResultMap``); a
    pod not tried gets a copy of its group's status; a pod that fitted in a failed group
    gets the group's status (with ``after``, what the post-filter added) behind the
    group's error; a pod that did not fit, its own reason."""
    if above is not None and (result is None or result.ok):
        result = None
    status = above if result is None else (None if result.ok else result)
    if group.kind == ob.COMPOSITE:
        out: list[PodResult] = []
        # a scheduler error returns before the children's results are copied up
        subs = {r.group: r for r in result.children} if result and not result.error else {}
        for child in ob.children(objs, group):
            out += _outcomes(subs.get(child), child, objs, status, after)
        return out
    tried = {r.pod: r for r in result.pods} if result is not None else {}
    said = status.message if status is not None else UNSCHEDULABLE
    out = []
    for pod in ob.pending(objs, group):
        r = tried.get(pod)
        if r is None or (status is not None and status.error):
            out.append(PodResult(pod, None, said))
        elif r.node and status is None:
            out.append(PodResult(pod, r.node, tied=r.tied))
        elif r.node:
            out.append(PodResult(pod, None, _wrapped(said + after)))
        else:
            out.append(PodResult(pod, None, r.message or said))
    return out


def _root_outcomes(result: GroupResult, root: Group, objs: Objects) -> list[PodResult]:
    """The hierarchy's pods after one cycle; the post-filter runs when the root failed."""
    after = "" if result.ok or result.error else f", {NO_VICTIMS}"
    return _outcomes(result, root, objs, None, after)


def _again(
    first: GroupResult, root: Group, state: State, objs: Objects, out: list[PodResult]
) -> list[PodResult]:
    """The cycles that follow one that fitted with pods left over: the queue puts a pod
    group whose attempt succeeded back in the active queue with its remaining pods, no
    backoff (``AddAttemptedPodGroupIfNeeded``), so kube-scheduler tries the hierarchy again
    at once, the pods it placed assumed (waiting in Permit or bound). What the last cycle
    says of a pod is what it ends with; a cycle that places none fails the root, and the
    pods go to backoff."""
    result = first
    while result.ok and any(not p.node for p in out):
        placed = {id(pod) for pod, _node in result.assignments}
        objs = replace(objs, pods=tuple(p for p in objs.pods if id(p) not in placed))
        state.caches.shapes.clear()  # the groups' pending pods changed
        state.caches.tries.clear()
        result.again = schedule_root(root, state, objs)
        result = result.again
        later = {id(p.pod): p for p in _root_outcomes(result, root, objs)}
        out = [p if p.node else later.get(id(p.pod), p) for p in out]
    return out


def advise(
    objs: Objects,
    nodes: Sequence[Node],
    origin: str,
    *,
    remember: bool = True,
    prefer: Prefer | None = None,
    prefer_domain: PreferDomain | None = None,
) -> Advice:
    """Schedule every hierarchy the file names, one after another, as kube-scheduler would
    now. Pods given only in the file with a node are counted on that node. ``remember``
    False recomputes every try (the same answer, slower: for tests and the benchmark).
    ``prefer`` picks among nodes tied for a pod's top score, ``prefer_domain`` among a
    group's tied placements (by default the first by name; a try's outcome then depends
    on more than its inputs, so none is reused)."""
    listed = {n.name for n in nodes}
    state = State.build(nodes, [p for p in objs.pods if p.node], objs.scoring)
    state.caches.remember = remember and prefer is None and prefer_domain is None
    state.caches.prefer, state.caches.prefer_domain = prefer, prefer_domain
    for pod in objs.unlisted:
        if pod.node in listed:
            state.add_usage(pod, pod.node)
    results: list[GroupResult] = []
    pods: list[PodResult] = []
    for root in ob.roots(objs, origin):
        result = schedule_root(root, state, objs)
        results.append(result)
        out = _root_outcomes(result, root, objs)
        if result.ok and any(not p.node for p in out):
            out = _again(result, root, state, objs, out)
        pods += out
    for pod in objs.orphans:
        waiting = f'waiting for pods\'s pod group "{pod.group}" to appear in scheduling queue'
        pods.append(PodResult(pod, None, waiting))
    return Advice(results, pods)
