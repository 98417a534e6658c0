"""What the pod-group cycle found: per pod its node, per placement tried its outcome, per
group (and CompositePodGroup child) its result."""

from __future__ import annotations

from dataclasses import dataclass, field

from labeler.sim.kubesched.objects import Assignment, Group, GroupPod


@dataclass
class PodResult:
    pod: GroupPod
    node: str | None
    message: str = ""
    tied: tuple[str, ...] = ()
    """When several nodes had the pod's top score: all of them, ``node`` among them, in
    name order (kube-scheduler takes one of them at random; the simulator the first)."""


@dataclass
class Placement:
    """One candidate placement as tried: its domain value (None: no constraint)."""

    domain: str | None
    nodes: int
    feasible: bool
    message: str = ""
    scores: dict[str, int] = field(default_factory=dict)
    pods: dict[str, list[str]] = field(default_factory=dict)
    """When no placement of the group is feasible: per pending pod of its subtree, the
    messages it may end with if kube-scheduler reports this placement (it reports the one
    a Go map walk met first: any of them)."""


@dataclass
class GroupResult:
    group: Group
    ok: bool
    message: str = ""
    """The group's status as kube-scheduler writes it (``Status.Message()``)."""
    cause: str = ""
    """The same status as an error (``Status.AsError()``), what a parent quotes as the
    ``first placement status``: ``pod group is unschedulable`` where the status carries
    that error, the message itself where it does not."""
    error: bool = False  # a scheduler error, not "unschedulable"
    domain: str | None = None
    pods: list[PodResult] = field(default_factory=list)
    children: list[GroupResult] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=list)
    tie: bool = False
    assignments: list[Assignment] = field(default_factory=list)
    """What the (sub)tree binds: every pod on its node."""
    note: str = ""
    """Why, in our words, when kube-scheduler's message does not say (no placement)."""
    alternatives: list[str] = field(default_factory=list)
    """Other messages kube-scheduler may write in place of ``message`` for the same
    outcome (it meets the running pods that hold a group to a domain in no set order)."""
    known: dict[str, int] = field(default_factory=dict)
    """Scores worked out for this outcome, shared with its copies (see ``memo``)."""
    again: GroupResult | None = None
    """For a root that fitted with pods left over, the cycle kube-scheduler runs next at
    once for them (``schedule._again``)."""
