"""Trying a group on a placement once for every group that would come out the same.

kube-scheduler tries every child of a CompositePodGroup on every candidate placement of the
child, inside every candidate placement of the parent; with identical children (a training
job's workers, one PodGroup per rack) most of those tries repeat an earlier one exactly. A
try's outcome depends only on the group's subtree (policies, counts, keys, its pending pods
as the filters and scores see them: ``GroupPod.key``), on which nodes its pods are already
on, and on the placement's nodes and their state (``State.gen``). With those equal, the
earlier outcome is taken, its pods and groups swapped for the new group's, position by
position. The answer is the one the full computation gives (a test compares them).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace

from labeler.core.capacity import Node
from labeler.sim.kubesched import objects as ob
from labeler.sim.kubesched.objects import Group, GroupPod, Objects
from labeler.sim.kubesched.results import GroupResult, Placement, PodResult
from labeler.sim.kubesched.state import State

Try = Callable[[Group, list[Node], State, Objects], GroupResult]
MAX_REMEMBERED = 100_000
"""Tries kept before the memory is emptied (a bound on memory, not a tuning knob)."""


def _shape(objs: Objects, group: Group, seen: dict[Group, Hashable]) -> Hashable:
    """The group's subtree as scheduling sees it, without names."""
    if group in seen:
        return seen[group]
    if group.kind == ob.COMPOSITE:
        below: Hashable = tuple(_shape(objs, c, seen) for c in ob.children(objs, group))
    else:
        below = tuple(p.key for p in ob.pending(objs, group))
    shape = (group.kind, group.namespace, group.gang, group.min_count, group.key, below)
    seen[group] = shape
    return shape


def _key(group: Group, nodes: Sequence[Node], state: State, objs: Objects) -> Hashable:
    placed = tuple(
        tuple(sorted(node for _pod, node in state.members.get((g.namespace, g.name), ())))
        for g in ob.subtree(objs, group)
        if g.kind == ob.PODGROUP
    )
    gen = state.gen
    where = tuple((n.name, gen[n.name]) for n in nodes)
    return (_shape(objs, group, state.caches.shapes), placed, where)


def _rebind(
    r: GroupResult, groups: dict[Group, Group], pods: dict[GroupPod, GroupPod]
) -> GroupResult:
    children = [_rebind(c, groups, pods) for c in r.children]
    if r.group.kind == ob.COMPOSITE:
        # a feasible composite binds what its children bind, in order (``_composite_default``)
        placed = [a for c in children for a in c.assignments] if r.assignments else []
    else:
        placed = [(pods[p], node) for p, node in r.assignments]
    return GroupResult(
        group=groups[r.group],
        ok=r.ok,
        message=r.message,
        cause=r.cause,
        error=r.error,
        domain=r.domain,
        pods=[PodResult(pods[p.pod], p.node, p.message, p.tied) for p in r.pods],
        children=children,
        placements=[_rebind_placement(p, pods) for p in r.placements],
        tie=r.tie,
        assignments=placed,
        note=r.note,
        alternatives=r.alternatives,
        known=r.known,
    )


def _rebind_placement(p: Placement, pods: dict[GroupPod, GroupPod]) -> Placement:
    if not p.pods:
        return p
    refs = {a.ref: b.ref for a, b in pods.items()}
    return replace(p, pods={refs.get(name, name): said for name, said in p.pods.items()})


def remembered_try(
    group: Group, nodes: list[Node], state: State, objs: Objects, run: Try
) -> GroupResult:
    """``run(group, nodes, state, objs)``, or the outcome of an equal earlier try.

    The caller may change the returned result's own fields (its domain, message,
    placements), never its children's; so what is kept is a shallow copy."""
    tries = state.caches.tries
    key = _key(group, nodes, state, objs)
    if key not in tries:
        if len(tries) >= MAX_REMEMBERED:
            tries.clear()
        result = run(group, nodes, state, objs)
        tries[key] = (group, replace(result))
        return result
    first, result = tries[key]
    if first == group:
        return replace(result)
    groups = dict(zip(ob.subtree(objs, first), ob.subtree(objs, group), strict=True))
    pods: dict[GroupPod, GroupPod] = {}
    for a, b in groups.items():
        pods.update(zip(ob.pending(objs, a), ob.pending(objs, b), strict=True))
    return _rebind(result, groups, pods)
