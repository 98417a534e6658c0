"""PodGroups, their Pods (Volcano's tasks) and Queues, read from Kubernetes objects.

The fields are those Volcano's scheduler reads (``pkg/scheduler/api``: ``job_info.go``,
``sub_job_info.go``, ``pod_info.go``, ``queue_info.go``); every problem names the object.
A pod joins a PodGroup through the annotation ``scheduling.k8s.io/group-name`` (same
namespace); its task (role) is the ``volcano.sh/task-spec`` annotation, else the label the
job controller also sets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import InputError
from labeler.core.capacity import resource_map
from labeler.core.volcano import TopologyMode
from labeler.sim.common.affinity import NodeAffinity, Requirement, parse_node_affinity
from labeler.sim.common.cluster import Toleration, pod_requests
from labeler.sim.common.fields import as_map, whole
from labeler.sim.common.shape import toleration_from_dict
from labeler.sim.volcano import resources as R

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC = "volcano.sh/task-spec"
PARTITION_ID = "volcano.sh/partition-id"
TASK_PRIORITY = "volcano.sh/task-priority"
PODGROUP_API = "scheduling.volcano.sh"
DEFAULT_QUEUE = "default"


# Task states (``api.TaskStatus``); "allocated" ones hold resources on a node.
PENDING, ALLOCATED, PIPELINED, BINDING, BOUND, RUNNING = (
    "Pending",
    "Allocated",
    "Pipelined",
    "Binding",
    "Bound",
    "Running",
)
RELEASING, SUCCEEDED, FAILED, UNKNOWN = "Releasing", "Succeeded", "Failed", "Unknown"
ALLOCATED_STATES = frozenset({BOUND, BINDING, RUNNING, ALLOCATED})


def named(
    obj: Mapping[str, Any], where: str, kind: str
) -> tuple[Mapping[str, Any], Mapping[str, Any], str]:
    """An object's metadata, spec and name; an object without a name is an error."""
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    name = str(meta.get("name") or "")
    if not name:
        raise InputError(f"{where}: a {kind} needs metadata.name")
    return meta, spec, name


def strings(raw: Any) -> dict[str, str]:
    return {str(k): "" if v is None else str(v) for k, v in as_map(raw).items()}


@dataclass(frozen=True)
class NetworkTopology:
    """``networkTopology``: ``mode`` hard or soft, and the highest tier by number or name."""

    mode: TopologyMode = TopologyMode.HARD
    highest_tier: int | None = None
    highest_tier_name: str = ""

    def describe(self) -> str:
        bound = (
            f"highestTierAllowed {self.highest_tier}"
            if self.highest_tier is not None
            else f"highestTierName {self.highest_tier_name}"
            if self.highest_tier_name
            else "no highest tier"
        )
        return f"{self.mode} mode, {bound}"


def network_topology(raw: Any, where: str) -> NetworkTopology | None:
    if raw is None:
        return None
    t = as_map(raw)
    mode = t.get("mode") or TopologyMode.HARD  # the CRD's default
    if mode not in tuple(TopologyMode):
        raise InputError(f"{where}.mode: {mode!r} is not hard or soft")
    tier = t.get("highestTierAllowed")
    name = str(t.get("highestTierName") or "")
    if tier is not None and name:
        raise InputError(
            f"{where}: must not specify 'highestTierAllowed' and 'highestTierName' in "
            "networkTopology simultaneously"
        )
    return NetworkTopology(
        mode=TopologyMode(mode),
        highest_tier=None if tier is None else whole(tier, f"{where}.highestTierAllowed"),
        highest_tier_name=name,
    )


@dataclass(frozen=True)
class LabelSelector:
    """A ``metav1.LabelSelector``: ANDed requirements; empty matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def label_selector(raw: Any, where: str) -> LabelSelector:
    sel = as_map(raw)
    reqs = [Requirement(k, "In", (v,)) for k, v in strings(sel.get("matchLabels")).items()]
    for i, e in enumerate(sel.get("matchExpressions") or []):
        e = as_map(e)
        op = e.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist") or not e.get("key"):
            raise InputError(f"{where}.matchExpressions[{i}]: needs a key and an operator")
        reqs.append(Requirement(str(e["key"]), str(op), tuple(map(str, e.get("values") or []))))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class SubGroupPolicy:
    """One ``spec.subGroupPolicy`` entry (Volcano ≥ 1.14): pods it selects form sub-groups
    of ``size`` pods, one per distinct value of ``match_label_keys``."""

    name: str
    size: int | None = None  # None: a sub-group is ready with 1 pod
    min_subgroups: int = 0
    selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    network_topology: NetworkTopology | None = None

    def match_values(self, labels: Mapping[str, str]) -> tuple[str, ...] | None:
        """``getSubJobMatchValues``: None when the pod is not in this policy. A policy
        without ``matchLabelKeys`` matches no pod: Volcano files a pod under a policy only
        when it gives at least one value (``getOrCreateSubJob``), so such pods fall to the
        job's default sub-job, and the policy's ``minSubGroups`` counts none of them."""
        if self.selector is not None and not self.selector.matches(labels):
            return None
        values = tuple(labels.get(k, "") for k in self.match_label_keys)
        return values if values and all(values) else None


@dataclass(frozen=True)
class PodGroup:
    namespace: str
    name: str
    queue: str = DEFAULT_QUEUE
    min_member: int = 0
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    min_resources: Mapping[str, int] | None = None
    network_topology: NetworkTopology | None = None
    subgroups: tuple[SubGroupPolicy, ...] = ()
    phase: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def _subgroup(raw: Any, where: str) -> SubGroupPolicy:
    p = as_map(raw)
    size = p.get("subGroupSize")
    return SubGroupPolicy(
        name=str(p.get("name") or ""),
        size=None if size is None else whole(size, f"{where}.subGroupSize"),
        min_subgroups=whole(p.get("minSubGroups"), f"{where}.minSubGroups", default=0),
        selector=None
        if p.get("labelSelector") is None
        else label_selector(p.get("labelSelector"), f"{where}.labelSelector"),
        match_label_keys=tuple(str(k) for k in p.get("matchLabelKeys") or []),
        network_topology=network_topology(p.get("networkTopology"), f"{where}.networkTopology"),
    )


def podgroup_from_object(obj: Mapping[str, Any], where: str) -> PodGroup:
    meta, spec, name = named(obj, where, "PodGroup")
    here = f"{where} (PodGroup {meta.get('namespace') or 'default'}/{name})"
    mtm = {
        str(k): whole(v, f"{here}: spec.minTaskMember[{k}]")
        for k, v in as_map(spec.get("minTaskMember")).items()
    }
    mr = spec.get("minResources")
    return PodGroup(
        namespace=str(meta.get("namespace") or "default"),
        name=name,
        queue=str(spec.get("queue") or DEFAULT_QUEUE),
        min_member=whole(spec.get("minMember"), f"{here}: spec.minMember", default=0),
        min_task_member=mtm,
        min_resources=None
        if mr is None
        else R.scheduler_view(resource_map(mr, f"{here}: spec.minResources")),
        network_topology=network_topology(
            spec.get("networkTopology"), f"{here}: spec.networkTopology"
        ),
        subgroups=tuple(
            _subgroup(p, f"{here}: spec.subGroupPolicy[{i}]")
            for i, p in enumerate(spec.get("subGroupPolicy") or [])
        ),
        phase=str(as_map(obj.get("status")).get("phase") or ""),
        annotations=strings(meta.get("annotations")),
    )


@dataclass(frozen=True)
class Task:
    """A pod as Volcano's scheduler sees it (``TaskInfo``)."""

    namespace: str
    name: str
    role: str
    requests: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: NodeAffinity | None = None
    preferred: tuple[tuple[int, NodeAffinity], ...] = ()  # (weight, term) to score nodes
    tolerations: tuple[Toleration, ...] = ()
    status: str = PENDING
    node: str = ""
    priority: int = 1
    gated: bool = False
    uid: str = ""
    created: str = ""  # metadata.creationTimestamp (RFC 3339 sorts as text)
    scheduler: str = "volcano"  # spec.schedulerName: Volcano schedules only its own pods
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def task_status(pod: Mapping[str, Any]) -> str:
    """``getTaskStatus``: phase, node and deletion decide."""
    phase = as_map(pod.get("status")).get("phase") or "Pending"
    deleting = as_map(pod.get("metadata")).get("deletionTimestamp") is not None
    if phase in ("Running", "Pending") and deleting:
        return RELEASING
    if phase == "Running":
        return RUNNING
    if phase == "Pending":
        return BOUND if as_map(pod.get("spec")).get("nodeName") else PENDING
    return {"Succeeded": SUCCEEDED, "Failed": FAILED}.get(str(phase), UNKNOWN)


def _preferred(spec: Mapping[str, Any], where: str) -> tuple[tuple[int, NodeAffinity], ...]:
    node = as_map(as_map(spec.get("affinity")).get("nodeAffinity"))
    out = []
    for i, p in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        p = as_map(p)
        term = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            p.get("preference") or {}
        ]}}  # fmt: skip
        parsed = parse_node_affinity({"nodeAffinity": term}, f"{where}: preferred[{i}]")
        if parsed is not None:
            out.append(
                (whole(p.get("weight"), f"{where}: preferred[{i}].weight", default=0), parsed)
            )
    return tuple(out)


def task_from_pod(pod: Mapping[str, Any], where: str) -> Task:
    meta, spec = as_map(pod.get("metadata")), as_map(pod.get("spec"))
    annotations, labels = strings(meta.get("annotations")), strings(meta.get("labels"))
    name = str(meta.get("name") or "")
    here = f"{where} (pod {meta.get('namespace') or 'default'}/{name})"
    priority = spec.get("priority")
    prio = priority if isinstance(priority, int) and not isinstance(priority, bool) else 1
    if re.fullmatch(r"[+-]?\d+", annotations.get(TASK_PRIORITY, "")):
        prio = int(annotations[TASK_PRIORITY])  # Volcano ignores a value it cannot parse
    return Task(
        namespace=str(meta.get("namespace") or "default"),
        name=name,
        role=annotations.get(TASK_SPEC) or labels.get(TASK_SPEC) or "",
        requests=pod_requests(pod, here),
        labels=labels,
        node_selector=strings(spec.get("nodeSelector")),
        affinity=parse_node_affinity(spec.get("affinity"), here),
        preferred=_preferred(spec, here),
        tolerations=tuple(
            toleration_from_dict(t, f"{here}: tolerations[{i}]")
            for i, t in enumerate(spec.get("tolerations") or [])
        ),
        status=task_status(pod),
        node=str(spec.get("nodeName") or ""),
        priority=prio,
        gated=bool(spec.get("schedulingGates")),
        uid=str(meta.get("uid") or ""),
        created=str(meta.get("creationTimestamp") or ""),
        scheduler=str(spec.get("schedulerName") or "default-scheduler"),
        annotations=annotations,
    )


def group_of(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(namespace, PodGroup name) of a pod, from its group-name annotation."""
    meta = as_map(pod.get("metadata"))
    group = strings(meta.get("annotations")).get(GROUP_ANNOTATION)
    return (str(meta.get("namespace") or "default"), group) if group else None


@dataclass(frozen=True)
class Queue:
    """A Volcano Queue (``scheduling.volcano.sh/v1beta1``, cluster-scoped)."""

    name: str
    weight: int = 1
    capability: Mapping[str, int] | None = None
    guarantee: Mapping[str, int] = field(default_factory=dict)
    deserved: Mapping[str, int] = field(default_factory=dict)
    state: str = "Open"
    parent: str = ""
    priority: int = 0


def queue_from_object(obj: Mapping[str, Any], where: str) -> Queue:
    _, spec, name = named(obj, where, "Queue")
    here = f"{where} (Queue {name})"
    cap = spec.get("capability")
    return Queue(
        name=name,
        weight=whole(spec.get("weight"), f"{here}: spec.weight", default=1),
        capability=resource_map(cap, f"{here}: spec.capability") if cap else None,
        guarantee=resource_map(
            as_map(spec.get("guarantee")).get("resource"), f"{here}: spec.guarantee"
        ),
        deserved=resource_map(spec.get("deserved"), f"{here}: spec.deserved"),
        # a queue without a state yet is one the queue controller is about to open
        state=str(as_map(obj.get("status")).get("state") or "Open"),
        parent=str(spec.get("parent") or ""),
        priority=whole(spec.get("priority"), f"{here}: spec.priority", default=0),
    )


@dataclass(frozen=True)
class Gang:
    """A PodGroup and its pods: the job Volcano schedules as one."""

    podgroup: PodGroup
    tasks: tuple[Task, ...]
    origin: str = ""  # "Job ns/name" when expanded from a Volcano Job
    notes: tuple[str, ...] = ()

    def pending(self) -> Sequence[Task]:
        return [t for t in self.tasks if t.status == PENDING]


def gang_of(podgroup: PodGroup, pods: Iterable[Mapping[str, Any]], origin: str) -> Gang:
    """A PodGroup and the pods that name it."""
    me = (podgroup.namespace, podgroup.name)
    tasks = tuple(task_from_pod(p, f"{origin}: pods") for p in pods if group_of(p) == me)
    return Gang(podgroup, tasks)
