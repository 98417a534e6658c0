"""From a simulation to advice: the verdict, the narrowest level that fits, and the
annotations to paste (Kueue) or the ``networkTopology`` stanza (Volcano).

Pure functions over a built tree; the CLI reads the cluster and prints.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import UsageError
from labeler.core.model import HOSTNAME_LABEL, Topology
from labeler.core.profiles import ASCEND_TREE_LABEL
from labeler.core.volcano import TopologyMode

# kueue apis/kueue/v1beta2/topology_types.go
from labeler.sim.common.shape import PodShape
from labeler.sim.kueue.assign import (
    Job,
    Mode,
    NodeAssignment,
    Outcome,
    SliceLayer,
)
from labeler.sim.kueue.gates import DEFAULT_GATES, Gates
from labeler.sim.kueue.multilevel import (
    AFFINITY_CONFIG_ANNOTATION,
    MULTILEVEL,
    SCHEDULE_POLICY_ANNOTATION,
    affinity_problems,
    derive_affinity,
)
from labeler.sim.kueue.place import simulate
from labeler.sim.kueue.tree import Capacity, ExclusionStats, Outside, Tree, leaf_capacity

# kueue apis/kueue/v1beta2/topology_types.go
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE_ANNOTATION = "kueue.x-k8s.io/podset-slice-size"
SLICE_CONSTRAINTS_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
MAX_SLICE_LAYERS = 3  # kueue jobframework: "between 1 and 3 entries"


def resolve_level(topology: Topology, key_or_name: str) -> int:
    """A tree level index from a label key or a level name (``hostname`` = the nodes)."""
    if key_or_name in (HOSTNAME_LABEL, "hostname"):
        return len(topology.levels)
    try:
        return topology.index(key_or_name)
    except KeyError as e:
        raise UsageError(f"{e.args[0]}, or hostname ({HOSTNAME_LABEL})") from e


def level_name(topology: Topology, index: int) -> str:
    return "hostname" if index == len(topology.levels) else topology.levels[index].name


def level_key(topology: Topology, index: int) -> str:
    return topology.kueue_levels()[index]


def make_job(
    topology: Topology,
    count: int,
    *,
    mode: Mode,
    level: str | None,
    slices: Sequence[tuple[str, int]] = (),
) -> Job:
    """Validate a request as Kueue's webhook would, then build the Job."""
    if count < 1:
        raise UsageError("--pods must be at least 1")
    if mode in (Mode.REQUIRED, Mode.PREFERRED) and not level:
        raise UsageError(f"--{mode} needs a level")
    if len(slices) > MAX_SLICE_LAYERS:
        raise UsageError(f"at most {MAX_SLICE_LAYERS} slice layers (Kueue's limit)")
    layers = tuple(SliceLayer(resolve_level(topology, lv), size) for lv, size in slices)
    for layer in layers:
        if layer.size < 1:
            raise UsageError("a slice size must be at least 1")
    if layers and count % layers[0].size:
        raise UsageError(
            f"--slice-size {layers[0].size} must evenly divide --pods {count} "
            "(Kueue rejects the workload otherwise)"
        )
    return Job(
        count=count,
        mode=Mode(mode),
        level=resolve_level(topology, level) if level and mode != Mode.UNCONSTRAINED else None,
        slices=layers,
    )


def placement_level(assignment: Sequence[NodeAssignment], depth: int) -> int | None:
    """The narrowest level at which every assigned node shares one domain (None: spans the
    top level too)."""
    if not assignment:
        return None
    for lvl in range(depth - 1, -1, -1):
        if len({a.values[: lvl + 1] for a in assignment}) == 1:
            return lvl
    return None


def narrowest_fit(tree: Tree, capacity: Capacity, job: Job) -> int | None:
    """The narrowest level at which one domain holds the whole job as a required request."""
    lowest = job.slices[0].level if job.slices else tree.depth - 1
    for lvl in range(lowest, -1, -1):
        probe = Job(count=job.count, mode=Mode.REQUIRED, level=lvl, slices=job.slices)
        if simulate(tree, capacity, probe).fits:
            return lvl
    return None


def kueue_annotations(topology: Topology, job: Job, level: int | None) -> dict[str, str]:
    """Pod-template annotations that make Kueue place the job this way."""
    out: dict[str, str] = {}
    if job.mode == Mode.UNCONSTRAINED or level is None:
        out[UNCONSTRAINED_ANNOTATION] = "true"
    else:
        key = REQUIRED_ANNOTATION if job.mode == Mode.REQUIRED else PREFERRED_ANNOTATION
        out[key] = level_key(topology, level)
    if len(job.slices) == 1:
        out[SLICE_TOPOLOGY_ANNOTATION] = level_key(topology, job.slices[0].level)
        out[SLICE_SIZE_ANNOTATION] = str(job.slices[0].size)
    elif job.slices:
        out[SLICE_CONSTRAINTS_ANNOTATION] = json.dumps(
            [{"topology": level_key(topology, s.level), "size": s.size} for s in job.slices]
        )
    return out


TIER_NAME_SINCE = (1, 14)


def tier_name_works(topology: Topology, level: int, volcano_version: tuple[int, int]) -> bool:
    """Does ``highestTierName`` resolve for ``level`` on static *and* discovered HyperNodes?

    Only from Volcano 1.14 (1.13's discovered HyperNodes carry no tierName; the scheduler
    skips a name it cannot find, and the job then runs unbounded), and only when the tier
    name is the label key, which is what discovery sets.
    """
    lv = topology.levels[min(level, len(topology.levels) - 1)]
    return volcano_version >= TIER_NAME_SINCE and lv.tier == lv.key


def volcano_network_topology(
    topology: Topology, mode: Mode, level: int | None, *, legacy: bool = False
) -> dict[str, Any] | None:
    """``spec.networkTopology`` for a Volcano Job/PodGroup bounding the job to ``level``.

    ``highestTierName`` (Volcano ≥ 1.14) names the HyperNode tier; ``highestTierAllowed``
    numbers it, tier 1 = narrowest, the same number on static and discovered HyperNodes.
    One node is not a HyperNode tier, so the hostname level maps to tier 1. Unconstrained
    jobs need no stanza.
    """
    if mode == Mode.UNCONSTRAINED or level is None:
        return None
    tiers = topology.hypernode_tiers()
    index = min(level, len(topology.levels) - 1)
    number, lv = next((n, lv) for n, lv in tiers if lv == topology.levels[index])
    hard = mode == Mode.REQUIRED
    stanza: dict[str, Any] = {"mode": (TopologyMode.HARD if hard else TopologyMode.SOFT).value}
    if legacy:
        stanza["highestTierAllowed"] = number
    else:
        stanza["highestTierName"] = lv.tier
    return {"networkTopology": stanza}


# kube-scheduler (Kubernetes 1.37): PodGroup scheduling.k8s.io/v1beta1
PODGROUP_API_VERSION = "scheduling.k8s.io/v1beta1"


def podgroup_constraints(
    topology: Topology, mode: Mode, level: int | None
) -> dict[str, Any] | None:
    """``spec.schedulingConstraints`` of a kube-scheduler PodGroup bounding the group to
    ``level``: TopologyPlacement makes one placement per value of the key, so every pod
    lands in one domain. kube-scheduler has no soft form: a preferred request gets the same
    (required) constraint. Unconstrained jobs need none."""
    if mode == Mode.UNCONSTRAINED or level is None:
        return None
    return {"schedulingConstraints": {"topology": [{"key": level_key(topology, level)}]}}


@dataclass(frozen=True)
class Advice:
    """Everything ``advise`` reports. Level fields are tree level indexes."""

    job: Job
    outcome: Outcome
    level: int | None
    narrowest_now: int | None
    narrowest_empty: int | None
    suggested_level: int | None
    annotations: Mapping[str, str]
    volcano: Mapping[str, Any] | None
    volcano_legacy: Mapping[str, Any] | None
    now: Capacity  # free pod slots per leaf now, which the simulation ran on
    empty: Capacity  # the same on an empty cluster
    outside: tuple[Outside, ...] = field(default_factory=tuple)
    nodes_in_tree: int = 0
    ascend: Mapping[str, str] | None = None  # multilevel job annotations (Ascend trees)
    podgroup: Mapping[str, Any] | None = None  # kube-scheduler PodGroup spec part

    @property
    def stats(self) -> ExclusionStats:
        """The nodes left out now, and why."""
        return self.now.stats


def advise(
    topology: Topology,
    tree: Tree,
    shape: PodShape,
    job: Job,
    *,
    volcano_version: tuple[int, int] = TIER_NAME_SINCE,
    affinity_config: str | None = None,
    gates: Gates = DEFAULT_GATES,
) -> Advice:
    """Simulate the job now, find the narrowest fitting level now and on an empty cluster,
    and say what to paste (``volcano`` is the stanza that works on ``volcano_version``).
    ``gates`` are Kueue's (the level probes are required requests, which no gate changes)."""
    now = leaf_capacity(tree, shape)
    empty = leaf_capacity(tree, shape, empty=True)
    outcome = simulate(tree, now, job, gates)
    narrow_now = narrowest_fit(tree, now, job)
    narrow_empty = narrowest_fit(tree, empty, job)
    if outcome.fits:
        suggested = job.level
    else:
        suggested = narrow_now if narrow_now is not None else narrow_empty
    if job.mode == Mode.UNCONSTRAINED:
        suggested = None
    return Advice(
        job=job,
        outcome=outcome,
        level=placement_level(outcome.assignment, tree.depth),
        narrowest_now=narrow_now,
        narrowest_empty=narrow_empty,
        suggested_level=suggested,
        annotations=(
            kueue_annotations(topology, job, suggested)
            if suggested is not None or job.mode == Mode.UNCONSTRAINED
            else {}
        ),
        volcano=volcano_network_topology(
            topology,
            job.mode,
            suggested,
            legacy=suggested is not None
            and not tier_name_works(topology, suggested, volcano_version),
        ),
        volcano_legacy=volcano_network_topology(topology, job.mode, suggested, legacy=True),
        now=now,
        empty=empty,
        outside=tuple(tree.outside),
        nodes_in_tree=len(tree.leaves),
        ascend=ascend_annotations(topology, job, suggested, affinity_config),
        podgroup=podgroup_constraints(topology, job.mode, suggested),
    )


def ascend_annotations(
    topology: Topology, job: Job, level: int | None, affinity_config: str | None = None
) -> dict[str, str] | None:
    """``huawei.com/schedule_policy``/``affinity-config`` for a tree ascend-for-volcano reads.

    ``affinity_config`` (the user's) must already be valid; otherwise one is derived from
    the request, and left out if it would break ascend-for-volcano's rules.
    """
    if topology.tree_label != ASCEND_TREE_LABEL:
        return None
    if affinity_config is None:
        derived = derive_affinity(topology, job, level)
        if derived is None:
            return None
        affinity_config = derived.text()
    if affinity_problems(affinity_config, job.count, len(topology.levels)):
        return None
    return {
        SCHEDULE_POLICY_ANNOTATION: MULTILEVEL,
        AFFINITY_CONFIG_ANNOTATION: affinity_config,
    }
