"""PodGroups, CompositePodGroups and their pods, read from plain API objects.

Field names are those of ``scheduling.k8s.io/v1beta1`` PodGroup and ``v1alpha3``
CompositePodGroup (Kubernetes 1.37): ``spec.schedulingPolicy.gang.minCount`` (composite:
``minGroupCount``) or ``spec.schedulingPolicy.basic``; ``spec.schedulingConstraints.
topology[0].key``; ``spec.parentCompositePodGroupName``. A pod joins a group with
``spec.schedulingGroup.podGroupName``. Every problem names the object and the field.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from labeler.base.errors import InputError
from labeler.core.capacity import resource_map
from labeler.core.node import TERMINATED_PHASES
from labeler.sim.common.cluster import pod_requests
from labeler.sim.common.fields import as_map
from labeler.sim.common.shape import PodShape, shape_of

API_GROUP = "scheduling.k8s.io"
PODGROUP = "PodGroup"
COMPOSITE = "CompositePodGroup"
KINDS = (PODGROUP, COMPOSITE)
VERSIONS = {PODGROUP: "v1beta1", COMPOSITE: "v1alpha3"}
"""The API version of each kind that Kubernetes 1.37 serves and this simulator reads."""

# pkg/scheduler/util: what scoring counts for a container that requests no CPU or memory
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
SCORED_RESOURCES = ("cpu", "memory")
NON_ZERO_UNITS = {"cpu": DEFAULT_MILLI_CPU, "memory": DEFAULT_MEMORY}
NON_ZERO_DEFAULTS = {"cpu": f"{DEFAULT_MILLI_CPU}m", "memory": str(DEFAULT_MEMORY)}
"""The same defaults as the quantities a container's requests would name."""


@dataclass(frozen=True)
class Group:
    """A PodGroup or a CompositePodGroup. ``min_count`` is 1 for the basic policy, as the
    GangScheduling plugin counts it (``getMinCount``)."""

    kind: str
    namespace: str
    name: str
    gang: bool
    min_count: int
    key: str | None
    parent: str | None

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def policy(self) -> str:
        return "gang" if self.gang else "basic"


@dataclass(frozen=True, eq=False)  # identity: one object per pod read
class GroupPod:
    """A pod of a group: pending (``node`` None) or already bound."""

    namespace: str
    name: str
    group: str
    shape: PodShape
    scored: Mapping[str, int]
    """CPU and memory as placement scoring counts them (non-zero defaults per container)."""
    node: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @cached_property
    def key(self) -> Hashable:
        """Equal for pods the filters and scores cannot tell apart (same requests,
        tolerations, nodeSelector and node affinity): the simulator reuses what it found
        for one."""
        shape = self.shape
        return (
            tuple(sorted(shape.requests.items())),
            tuple(sorted(self.scored.items())),
            shape.tolerations,
            tuple(sorted(shape.node_selector.items())),
            shape.affinity,
        )

    @cached_property
    def need(self) -> Mapping[str, int]:
        """What the filters check: the requests plus the pod slot."""
        return self.shape.with_pod_slot()


Assignment = tuple[GroupPod, str]
"""A pod on a node, bound or assumed."""


def is_scheduling_k8s(obj: Mapping[str, Any]) -> bool:
    """A PodGroup or CompositePodGroup of kube-scheduler (not Volcano's, same kind name)."""
    api = str(obj.get("apiVersion") or "")
    return obj.get("kind") in KINDS and api.split("/", 1)[0] == API_GROUP


def _meta(obj: Mapping[str, Any], where: str) -> tuple[str, str]:
    meta = as_map(obj.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: metadata.name is missing")
    return str(meta.get("namespace") or "default"), name


def group_from_object(obj: Mapping[str, Any], where: str) -> Group:
    """One PodGroup/CompositePodGroup; what the API server's validation would refuse is an
    error naming the field."""
    kind = str(obj.get("kind"))
    namespace, name = _meta(obj, where)
    where = f"{where} ({kind} {namespace}/{name})"
    spec = as_map(obj.get("spec"))
    policy = as_map(spec.get("schedulingPolicy"))
    count_field = "minGroupCount" if kind == COMPOSITE else "minCount"
    if ("gang" in policy) == ("basic" in policy):
        raise InputError(
            f"{where}: spec.schedulingPolicy needs exactly one of gang ({count_field}) or basic"
        )
    gang = "gang" in policy
    count = as_map(policy.get("gang")).get(count_field) if gang else 1
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InputError(
            f"{where}: spec.schedulingPolicy.gang.{count_field} must be a positive integer, "
            f"got {count!r}"
        )
    topology = as_map(spec.get("schedulingConstraints")).get("topology") or []
    if not isinstance(topology, Sequence) or isinstance(topology, str) or len(topology) > 1:
        raise InputError(
            f"{where}: spec.schedulingConstraints.topology takes at most one entry "
            "(Kubernetes 1.37 supports a single topology constraint)"
        )
    key = None
    if topology:
        key = as_map(topology[0]).get("key")
        if not isinstance(key, str) or not key:
            raise InputError(f"{where}: spec.schedulingConstraints.topology[0].key is missing")
    parent = spec.get("parentCompositePodGroupName")
    if parent is not None and (not isinstance(parent, str) or not parent):
        raise InputError(f"{where}: spec.parentCompositePodGroupName must be a name")
    if parent is not None and kind == PODGROUP and not spec.get("workloadRef"):
        raise InputError(
            f"{where}: spec.workloadRef is required when spec.parentCompositePodGroupName is "
            "set (the API server refuses such a PodGroup): name the Workload and its template"
        )
    return Group(kind, namespace, name, gang, count, key, parent)


def group_name_of(pod: Mapping[str, Any]) -> str | None:
    """``spec.schedulingGroup.podGroupName``, or None for a pod outside any group."""
    name = as_map(as_map(pod.get("spec")).get("schedulingGroup")).get("podGroupName")
    return name if isinstance(name, str) and name else None


def _with_defaults(containers: Any) -> Any:
    """The containers with 100m CPU / 200Mi memory where a request is missing (not zero)."""
    if not isinstance(containers, Sequence) or isinstance(containers, str):
        return containers
    out = []
    for c in containers:
        c = as_map(c)
        reqs = as_map(as_map(c.get("resources")).get("requests"))
        missing = {r: q for r, q in NON_ZERO_DEFAULTS.items() if r not in reqs}
        if missing:
            resources = {**as_map(c.get("resources")), "requests": {**reqs, **missing}}
            c = {**c, "resources": resources}
        out.append(c)
    return out


def non_zero_requests(spec: Mapping[str, Any], where: str) -> dict[str, int]:
    """CPU and memory as kube-scheduler's NodeResourcesFit scores them, for a pending or a
    running pod alike: ``resourcehelper.PodRequests`` with the non-zero defaults
    (``schedutil.GetNonzeroRequests``) put in for every container, init containers too,
    that does not name the resource; pod-level requests and the overhead as usual."""
    if spec.get("initContainers") or as_map(spec.get("resources")).get("requests"):
        filled = {
            **spec,
            "containers": _with_defaults(spec.get("containers") or []),
            "initContainers": _with_defaults(spec.get("initContainers") or []),
        }
        reqs = pod_requests({"spec": filled}, where)
        return {r: reqs.get(r, 0) for r in SCORED_RESOURCES}
    # the common pod: the containers' requests summed, each missing one at its default
    total = {"cpu": 0, "memory": 0}
    for i, c in enumerate(spec.get("containers") or []):
        raw = as_map(as_map(as_map(c).get("resources")).get("requests"))
        given = resource_map(raw, f"{where}: containers[{i}].resources.requests")
        for res in SCORED_RESOURCES:
            total[res] += given.get(res, 0) if res in raw else NON_ZERO_UNITS[res]
    overhead = resource_map(spec.get("overhead"), f"{where}: spec.overhead")
    return {r: total[r] + overhead.get(r, 0) for r in SCORED_RESOURCES}


def pod_from_object(obj: Mapping[str, Any], where: str) -> GroupPod | None:
    """A pod of a group, or None (not in a group, or finished)."""
    group = group_name_of(obj)
    phase = as_map(obj.get("status")).get("phase")
    if group is None or phase in TERMINATED_PHASES:
        return None
    namespace, name = _meta(obj, where)
    here = f"{where} (Pod {namespace}/{name})"
    spec = as_map(obj.get("spec"))
    node = spec.get("nodeName")
    return GroupPod(
        namespace=namespace,
        name=name,
        group=group,
        shape=shape_of({"spec": spec}, here),
        scored=non_zero_requests(spec, here),
        node=str(node) if node else None,
    )


@dataclass(frozen=True)
class Objects:
    """Everything the simulator reads: groups by (kind, namespace, name), pods in order."""

    groups: Mapping[tuple[str, str, str], Group]
    pods: tuple[GroupPod, ...]
    order: tuple[tuple[str, str, str], ...]
    """The groups given to advise (the file's), in the file's order."""
    orphans: tuple[GroupPod, ...] = ()
    """The file's pending pods whose PodGroup is nowhere to be found."""
    unlisted: tuple[GroupPod, ...] = ()
    """The file's bound pods that the cluster's objects do not list (their usage is added)."""
    scoring: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per node, CPU and memory of the cluster's running pods as NodeResourcesFit scores
    them (``NodeInfo.NonZeroRequested``: every pod, in a group or not, with the defaults)."""

    @cached_property
    def waiting(self) -> Mapping[tuple[str, str], list[GroupPod]]:
        """Per (namespace, PodGroup name): its pods waiting for a node, in the order read."""
        out: dict[tuple[str, str], list[GroupPod]] = {}
        for p in self.pods:
            if p.node is None:
                out.setdefault((p.namespace, p.group), []).append(p)
        return out

    @cached_property
    def kids(self) -> Mapping[tuple[str, str], list[Group]]:
        """Per (namespace, CompositePodGroup name): its children, the file's first in its
        order, then the others by name."""
        rank = {key: i for i, key in enumerate(self.order)}
        out: dict[tuple[str, str], list[Group]] = {}
        for key in sorted(self.groups, key=lambda k: (rank.get(k, len(rank)), k[2])):
            g = self.groups[key]
            if g.parent is not None:
                out.setdefault((g.namespace, g.parent), []).append(g)
        return out


def _count_running(
    obj: Mapping[str, Any], pod: GroupPod | None, where: str, into: dict[str, dict[str, int]]
) -> None:
    """Add a cluster pod bound to a node to ``into`` (its node's non-zero requests)."""
    if pod is not None:
        node, scored = pod.node, pod.scored
    else:
        spec = as_map(obj.get("spec"))
        node = spec.get("nodeName")
        if not node or as_map(obj.get("status")).get("phase") in TERMINATED_PHASES:
            return
        scored = non_zero_requests(spec, f"{where} (Pod)")
    if node:
        total = into.setdefault(str(node), {})
        for res, qty in scored.items():
            total[res] = total.get(res, 0) + qty


def collect(
    asked: Iterable[tuple[Mapping[str, Any], str]],
    known: Iterable[tuple[Mapping[str, Any], str]],
) -> Objects:
    """The file's objects (``asked``: object and where it is) and the cluster's or
    snapshot's (``known``). A file object replaces a known one of the same name; a pod in
    both counts once. All problems are reported together."""
    groups: dict[tuple[str, str, str], Group] = {}
    pods: dict[tuple[str, str], GroupPod] = {}
    asked_pods: list[GroupPod] = []
    unlisted: list[GroupPod] = []
    order: list[tuple[str, str, str]] = []
    scoring: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    for is_asked, source in ((False, known), (True, asked)):
        for obj, where in source:
            try:
                if is_scheduling_k8s(obj):
                    g = group_from_object(obj, where)
                    key = (g.kind, g.namespace, g.name)
                    groups[key] = g
                    if is_asked and key not in order:
                        order.append(key)
                elif obj.get("kind") == "Pod":
                    p = pod_from_object(obj, where)
                    if not is_asked:
                        _count_running(obj, p, where, scoring)
                    if p is None:
                        continue
                    if is_asked:
                        asked_pods.append(p)
                    known_pod = (p.namespace, p.name) in pods
                    if is_asked and p.node and not known_pod:
                        unlisted.append(p)
                    pods[(p.namespace, p.name)] = p
            except InputError as e:
                problems.extend(e.problems)
    if problems:
        raise InputError(problems, heading="cannot read the PodGroups and their pods:")
    orphans = tuple(
        p for p in asked_pods if p.node is None and (PODGROUP, p.namespace, p.group) not in groups
    )
    return Objects(groups, tuple(pods.values()), tuple(order), orphans, tuple(unlisted), scoring)


def children(objs: Objects, group: Group) -> list[Group]:
    """The groups whose parent is ``group`` (a CompositePodGroup): the file's first, in
    its order, then the others by name."""
    if group.kind != COMPOSITE:
        return []
    return objs.kids.get((group.namespace, group.name), [])


def subtree(objs: Objects, group: Group) -> list[Group]:
    """``group`` and every group under it."""
    out = [group]
    for child in children(objs, group):
        out += subtree(objs, child)
    return out


def pod_groups_under(objs: Objects, group: Group) -> list[str]:
    """Names of the PodGroups in ``group``'s subtree (pods join PodGroups only)."""
    return [g.name for g in subtree(objs, group) if g.kind == PODGROUP]


def pending(objs: Objects, group: Group) -> list[GroupPod]:
    """The PodGroup's pods waiting for a node, in the order read."""
    if group.kind != PODGROUP:
        return []
    return objs.waiting.get((group.namespace, group.name), [])


def parent_of(objs: Objects, group: Group, origin: str) -> Group | None:
    if group.parent is None:
        return None
    found = objs.groups.get((COMPOSITE, group.namespace, group.parent))
    if found is None:
        raise InputError(
            f"{group.ref}: its parent CompositePodGroup {group.namespace}/{group.parent} is "
            f"in neither {origin} nor the cluster's objects; add it to the file"
        )
    return found


def roots(objs: Objects, origin: str) -> list[Group]:
    """The top of each hierarchy the file's groups belong to, in the file's order."""
    out: list[Group] = []
    for key in objs.order:
        group = objs.groups[key]
        chain = [group]
        while (up := parent_of(objs, group, origin)) is not None:
            if up in chain:
                names = " → ".join(g.name for g in [*chain[chain.index(up) :], up])
                raise InputError(
                    f"{up.ref}: spec.parentCompositePodGroupName makes a cycle ({names}); "
                    "a hierarchy needs a root without a parent"
                )
            chain.append(up)
            group = up
        if group not in out:
            out.append(group)
    return out
