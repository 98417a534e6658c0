"""What Kueue does to an admitted TAS Workload when nodes of its assignment fail.

The rules are Kueue's (``pkg/controller/tas/node_controller.go``, the scheduler's second
pass in ``pkg/scheduler/scheduler.go`` and ``FindTopologyAssignmentsForFlavor``), under the
modelled gates (:mod:`labeler.sim.kueue.gates`):

- Which nodes fail. A node the Workload's ``status.unhealthyNodes`` lists is failed.
  The node controller records another when it is gone (at once); NotReady (once the
  Workload's pods there have ended, ``TASReplaceNodeOnPodTermination``; else 30 s after);
  or, with ``TASReplaceNodeOnNodeTaints``, tainted NoSchedule/NoExecute in a way a PodSet
  there does not tolerate (a cordon adds ``node.kubernetes.io/unschedulable``). Without
  ``TASFailedNodeReplacement`` it records nothing.
- Two at once evict. The node controller evicts a Workload that already has a failed
  node recorded when another fails ("…due to multiple TAS assigned node failures…").
- One is replaced. The scheduler searches a replacement for each PodSet with pods on the
  node (:mod:`labeler.sim.kueue.replace`) and re-admits the Workload; a PodSet without one
  evicts it (``TASFailedNodeReplacementFailFast``) or leaves it waiting, the node still
  recorded. A Workload owned by a single Pod keeps its assignment
  (``SkipReassignmentForPodOwnedWorkloads``).

Only a topology whose lowest level is the hostname names nodes in its assignments; for
any other Kueue's node-failure handling does not see the Workload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from labeler.core.capacity import Node
from labeler.core.node import Taint
from labeler.sim.common.cluster import first_untolerated
from labeler.sim.kueue.admit import add_usage
from labeler.sim.kueue.gates import (
    DEFAULT_GATES,
    FAIL_FAST,
    NOT_READY_FIXED_TIME,
    ON_NODE_TAINTS,
    ON_POD_TERMINATION,
    REPLACEMENT,
    SKIP_POD_OWNED,
    Gates,
    Timing,
)
from labeler.sim.kueue.replace import Assigned, Replacement, search
from labeler.sim.kueue.tree import Tree, build_tree_for_levels
from labeler.sim.kueue.usage import TasFlavor
from labeler.sim.kueue.workload import PodSet


class Fate(StrEnum):
    """What Kueue does to the Workload about its failed nodes."""

    REPLACED = "replaced"  # every failed node has a replacement; the Workload is re-admitted
    EVICTED = "evicted"
    WAITING = "waiting"  # still admitted, the failed node recorded, no replacement found
    KEPT = "kept"  # Kueue keeps the assignment as it is: not a replacement
    UNAFFECTED = "unaffected"  # no failed node holds a pod of the Workload


CORDON_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
GONE = "gone (--failed-node)"
MULTIPLE = "Workload eviction triggered due to multiple TAS assigned node failures, including: "
NO_REPLACEMENT = "Workload was evicted as there was no replacement for unhealthy node(s): "


@dataclass(frozen=True)
class AdmittedPodSet:
    podset: PodSet  # from the spec; ``count`` is the admitted count
    flavor: str
    assignment: tuple[Assigned, ...]
    by_hostname: bool  # the assignment's levels end with the hostname

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(values[-1] for values, n in self.assignment if n > 0)


@dataclass(frozen=True)
class Admitted:
    namespace: str
    name: str
    cluster_queue: str
    podsets: tuple[AdmittedPodSet, ...]
    unhealthy: tuple[str, ...] = ()  # status.unhealthyNodes, in order
    pod_owned: bool = False  # owned by exactly one Pod and not a pod group

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def on(self, node: str) -> list[AdmittedPodSet]:
        return [ps for ps in self.podsets if node in ps.nodes]


@dataclass(frozen=True)
class Failure:
    """A failed node of the Workload's assignment, as Kueue sees it."""

    node: str
    cause: str
    recorded: bool = False  # already in status.unhealthyNodes
    wait: str = ""  # "" when Kueue records it now, else when it will
    podsets: tuple[str, ...] = ()


@dataclass
class FlavorState:
    """A flavor: its topology over the snapshot's nodes, what admitted Workloads hold on
    it (the failing one included), and its tolerations (added to every PodSet's)."""

    flavor: TasFlavor
    nodes: Sequence[Node]
    held: Mapping[str, Mapping[str, int]]
    _trees: dict[frozenset[str], Tree] = field(default_factory=dict, repr=False)

    def tree(self, gone: frozenset[str] = frozenset()) -> Tree:
        """The topology without the nodes in ``gone`` (those failed so far)."""
        if gone not in self._trees:
            f = self.flavor
            self._trees[gone] = build_tree_for_levels(
                f.levels,
                [n for n in self.nodes if n.name not in gone],
                flavor_labels=f.node_labels,
                topology_name=f.topology,
            )
        return self._trees[gone]


@dataclass(frozen=True)
class FailureAnswer:
    workload: Admitted
    failures: tuple[Failure, ...]
    outcome: Fate
    message: str = ""  # Kueue's (eviction, second-pass failure), or why the assignment stays
    steps: tuple[Replacement, ...] = ()
    ignored: tuple[Failure, ...] = ()  # failures Kueue does not act on (gate off)
    assignments: Mapping[str, tuple[Assigned, ...]] = field(default_factory=dict)
    levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # flavor → level keys

    @property
    def fits(self) -> bool:
        """True when every failed node of the Workload is replaced (or none failed)."""
        return self.outcome in (Fate.REPLACED, Fate.UNAFFECTED)


def node_failures(
    wl: Admitted,
    nodes: Mapping[str, Node],
    failed: Sequence[str],
    running: Mapping[str, int],
    gates: Gates = DEFAULT_GATES,
) -> list[Failure]:
    """The Workload's failed nodes in the order Kueue meets them: the recorded ones, those
    failed in the snapshot (by name), then ``failed`` (``--failed-node``) as given.

    ``running``: node → the Workload's pods there that have not ended (they delay
    ``TASReplaceNodeOnPodTermination``)."""
    out: dict[str, Failure] = {}
    assigned = sorted({n for ps in wl.podsets for n in ps.nodes})
    for name in wl.unhealthy:
        out.setdefault(name, Failure(name, "recorded in status.unhealthyNodes", recorded=True))
    for name in assigned:
        if name in out or name in failed:
            continue
        if seen := _in_snapshot(wl, name, nodes.get(name), running, gates):
            out[name] = seen
    for name in failed:
        out.setdefault(name, Failure(name, GONE))
    return [
        Failure(f.node, f.cause, f.recorded, f.wait, tuple(ps.podset.name for ps in wl.on(f.node)))
        for f in out.values()
    ]


def _in_snapshot(
    wl: Admitted, name: str, node: Node | None, running: Mapping[str, int], gates: Gates
) -> Failure | None:
    if node is None:
        return Failure(name, "gone (no such node)")
    pods = running.get(name, 0)
    ends = f"once this Workload's {pods} running pod(s) there end" if pods else ""
    if not node.ready:
        if not gates.on(ON_POD_TERMINATION):
            return Failure(name, "NotReady", wait="30 s after it went NotReady")
        if ends and gates.on(NOT_READY_FIXED_TIME):
            ends += ", or 30 s after it went NotReady"
        return Failure(name, "NotReady", wait=ends)
    if not gates.on(ON_NODE_TAINTS):
        return None
    taints = list(node.taints)
    if node.unschedulable and CORDON_TAINT not in taints:
        taints.append(CORDON_TAINT)  # what the node lifecycle controller adds on a cordon
    for ps in wl.on(name):
        taint = first_untolerated(taints, ps.podset.shape.tolerations)
        if taint is not None:
            what = "cordoned" if taint == CORDON_TAINT else "tainted"
            cause = f"{what}: taint {taint} not tolerated by PodSet {ps.podset.name}"
            return Failure(name, cause, wait=ends if gates.on(ON_POD_TERMINATION) else "")
    return None


def failure_answer(
    wl: Admitted,
    failures: Sequence[Failure],
    flavors: Mapping[str, FlavorState],
    gates: Gates = DEFAULT_GATES,
    *,
    timing: Timing,
) -> FailureAnswer:
    """Kueue's answer to ``failures`` (from :func:`node_failures`), as they happen in
    ``timing``."""
    answer = _answer(wl, failures, flavors, gates, timing)
    levels = {name: tuple(state.flavor.levels) for name, state in flavors.items()}
    return replace(answer, levels=levels)


def _answer(
    wl: Admitted,
    failures: Sequence[Failure],
    flavors: Mapping[str, FlavorState],
    gates: Gates,
    timing: Timing,
) -> FailureAnswer:
    seen = tuple(failures)
    hits = tuple(f for f in failures if f.podsets)
    if not hits:
        return FailureAnswer(wl, seen, Fate.UNAFFECTED)
    if not all(ps.by_hostname for ps in wl.podsets):
        why = (
            "the assignment names no nodes (the topology's lowest level is not the hostname), "
            "so Kueue's node-failure handling does not see this Workload"
        )
        return FailureAnswer(wl, seen, Fate.KEPT, why)
    acted = tuple(f for f in hits if f.recorded or gates.on(REPLACEMENT))
    ignored = tuple(f for f in hits if f not in acted)
    if not acted:
        why = (
            f"{REPLACEMENT} is off: Kueue marks no node failed; the assignment stays and the "
            "pods on the failed node(s) are the job controller's to recreate (there)"
        )
        return FailureAnswer(wl, seen, Fate.KEPT, why, ignored=ignored)
    now = [f for f in acted if not f.wait]
    if timing is Timing.TOGETHER and len(now) >= 2:
        names = ", ".join(f.node for f in now[:2])
        return FailureAnswer(wl, seen, Fate.EVICTED, MULTIPLE + names, ignored=ignored)
    return _replace_in_turn(
        wl, seen, [*now, *(f for f in acted if f.wait)], flavors, gates, ignored
    )


def _replace_in_turn(
    wl: Admitted,
    seen: tuple[Failure, ...],
    order: Sequence[Failure],
    flavors: Mapping[str, FlavorState],
    gates: Gates,
    ignored: tuple[Failure, ...],
) -> FailureAnswer:
    """Each failure after the previous one was handled: replaced, or left recorded."""
    assignments = {ps.podset.name: ps.assignment for ps in wl.podsets}
    held = {name: {k: dict(v) for k, v in fs.held.items()} for name, fs in flavors.items()}
    steps: list[Replacement] = []
    stuck: tuple[str, str] | None = None  # (node, Kueue's second-pass message)
    gone: frozenset[str] = frozenset()  # --failed-node nodes down so far
    for f in order:
        if f.cause == GONE:
            gone |= {f.node}
        if stuck is not None:  # a second failure while the first is still recorded
            message = MULTIPLE + f"{stuck[0]}, {f.node}"
            return FailureAnswer(
                wl, seen, Fate.EVICTED, message, tuple(steps), ignored, assignments
            )
        if wl.pod_owned and gates.on(SKIP_POD_OWNED):
            why = (
                f"owned by a single Pod ({SKIP_POD_OWNED}): Kueue keeps the assignment as it "
                "is; the Workload ends with its pod"
            )
            return FailureAnswer(wl, seen, Fate.KEPT, why, tuple(steps), ignored, assignments)
        for ps in wl.on(f.node):
            tree, used = flavors[ps.flavor].tree(gone), held[ps.flavor]
            r = search(tree, ps.podset, assignments[ps.podset.name], f.node, used, gates)
            steps.append(r)
            if not r.replaced:
                if gates.on(FAIL_FAST):
                    msg = NO_REPLACEMENT + f.node
                    return FailureAnswer(
                        wl, seen, Fate.EVICTED, msg, tuple(steps), ignored, assignments
                    )
                stuck = (
                    f.node,
                    f"couldn't assign flavors to pod set {ps.podset.name}: {r.message}",
                )
                break
            assignments[ps.podset.name] = r.assignment
            add_usage(used, tree, r.outcome.assignment, ps.podset.shape.requests)
    if stuck is not None:
        return FailureAnswer(wl, seen, Fate.WAITING, stuck[1], tuple(steps), ignored, assignments)
    return FailureAnswer(wl, seen, Fate.REPLACED, "", tuple(steps), ignored, assignments)
