"""GangScheduling's Permit after a pod-group cycle that fitted, and the cycle it starts.

When a hierarchy fits, kube-scheduler hands its placed pods one by one to the binding
cycle, and Permit checks the gang's quorum for each as it comes: a PodGroup of its own
counts its pods bound or assumed against ``minCount``; a PodGroup under a
CompositePodGroup asks whether the whole tree is ready (``isCPGTreeReady`` on the same
counts). At the first pod only that pod is assumed, so for a gang of ``minCount`` above one
the quorum is not met: Permit makes the pod wait and activates every pod of the gang (of
the whole hierarchy, for a tree) not yet bound or assumed. Those that found no node in the
cycle come back to the queue at once, and kube-scheduler runs the hierarchy again with the
first cycle's pods assumed. A basic PodGroup of its own has no Permit step.

Which pod comes first is a walk over a Go map of the hierarchy's groups, so for a tree it
may be a pod whose group alone makes the tree ready (no second cycle) or one whose group
does not: ``Activation.MAYBE``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from enum import Enum

from labeler.tas.kubesched import objects as ob
from labeler.tas.kubesched.objects import Assignment, Group, Objects


class Activation(Enum):
    NEVER = "never"
    ALWAYS = "always"
    MAYBE = "maybe"
    """It depends on which group's pod kube-scheduler sends to Permit first (random)."""


def _ready(objs: Objects, group: Group, counts: Mapping[str, int]) -> bool:
    """isPGReady / isCPGTreeReady with ``counts`` (PodGroup name: pods bound or assumed)."""
    if group.kind == ob.PODGROUP:
        return counts.get(group.name, 0) >= group.min_count
    ready = sum(_ready(objs, child, counts) for child in ob.children(objs, group))
    return ready >= group.min_count


def activation(
    root: Group, objs: Objects, before: Mapping[str, int], placed: Iterable[Assignment]
) -> Activation:
    """Whether the first placed pod's Permit finds the quorum unmet. ``before``: per
    PodGroup of the hierarchy, its pods on nodes before the cycle."""
    groups = {pod.group for pod, _node in placed}
    if not groups:
        return Activation.NEVER
    if root.kind == ob.PODGROUP:
        # permitPodGroup: a basic PodGroup is not held; a gang waits below minCount
        unmet = root.gang and before.get(root.name, 0) + 1 < root.min_count
        return Activation.ALWAYS if unmet else Activation.NEVER
    outcomes = set()
    for name in groups:
        counts = Counter(before)
        counts[name] += 1
        outcomes.add(not _ready(objs, root, counts))
    if outcomes == {True}:
        return Activation.ALWAYS
    return Activation.NEVER if outcomes == {False} else Activation.MAYBE


def without(objs: Objects, placed: Iterable[Assignment]) -> Objects:
    """The objects as the second cycle sees them: the placed pods are no longer pending
    (``State`` holds them as assumed)."""
    gone = {id(pod) for pod, _node in placed}
    return replace(objs, pods=tuple(p for p in objs.pods if id(p) not in gone))
