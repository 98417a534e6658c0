"""Cluster state for the simulator: nodes, what their pods use, taints and tolerations.

Built from plain Kubernetes objects (a ``kubectl get nodes,pods -A -o yaml`` List, or the
raw JSON that ``labeler.kube`` reads), so that a snapshot file and a live cluster go through
the same code. Pure functions: the caller does the reading.

Used capacity follows Kueue's non-TAS usage accounting (kueue ``nonTasUsageCache``): every
non-terminated pod bound to a node uses its effective requests plus ``pods: 1``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from labeler.base.errors import InputError
from labeler.core.capacity import Node, node_from_object, resource_map
from labeler.core.dra import SliceDevices, read_slice
from labeler.core.node import TERMINATED_PHASES, Taint
from labeler.core.quantity import PODS

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")
# kueue ``utiltas.IsTAS``: a pod with one of these annotations is a TAS pod
TAS_POD_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-required-topology-constraints",
)


@dataclass(frozen=True)
class Toleration:
    """A pod toleration. ``operator`` is ``Equal`` or ``Exists``; empty key/effect match all."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """``corev1.Toleration.ToleratesTaint``: effect, then key, then value unless Exists."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value

    @classmethod
    def parse(cls, text: str) -> Toleration:
        """``KEY[=VALUE][:EFFECT]``; no value means ``Exists``; ``*`` tolerates every taint."""
        if text.strip() == "*":
            return cls(operator="Exists")
        body, _, effect = text.partition(":")
        key, eq, value = body.partition("=")
        if effect and effect not in (*SCHEDULING_EFFECTS, "PreferNoSchedule"):
            raise InputError(
                f"--toleration {text!r}: effect must be NoSchedule, NoExecute or PreferNoSchedule"
            )
        if not key.strip():
            raise InputError(f"--toleration {text!r}: give KEY[=VALUE][:EFFECT] or '*'")
        return cls(
            key=key.strip(), operator="Equal" if eq else "Exists", value=value, effect=effect
        )


def first_untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration matches.

    Follows ``FindMatchingUntoleratedTaint`` with kueue's ``IsSchedulingTaint`` filter, as
    ``defaultSimulatorSnapshot.FindFeasibleNodes`` calls it: the first one found is the one
    the exclusion statistics name.
    """
    for taint in taints:
        if taint.effect not in SCHEDULING_EFFECTS:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = max(into.get(k, 0), v)


def pod_requests(pod: Mapping[str, Any], where: str = "pod") -> dict[str, int]:
    """A pod's effective requests, the way ``resourcehelpers.PodRequests`` computes them.

    Sum of app containers and sidecars (init containers with ``restartPolicy: Always``);
    each ordinary init container needs its own requests plus the sidecars started before it,
    and the pod needs the larger of the two; pod-level ``spec.resources.requests`` replace
    the computed value for the resources they name; ``spec.overhead`` is added.
    """
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for i, c in enumerate(spec.get("containers") or []):
        reqs = ((c or {}).get("resources") or {}).get("requests")
        _add(total, resource_map(reqs, f"{where}: containers[{i}].resources.requests"))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(spec.get("initContainers") or []):
        c = c or {}
        reqs = resource_map(
            (c.get("resources") or {}).get("requests"),
            f"{where}: initContainers[{i}].resources.requests",
        )
        if c.get("restartPolicy") == "Always":
            _add(sidecars, reqs)
            _add(total, reqs)
            _max_into(init_peak, sidecars)
        else:
            need = dict(sidecars)
            _add(need, reqs)
            _max_into(init_peak, need)
    _max_into(total, init_peak)
    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        total.update(resource_map(pod_level, f"{where}: spec.resources.requests"))
    _add(total, resource_map(spec.get("overhead"), f"{where}: spec.overhead"))
    return total


def is_resident(pod: Mapping[str, Any]) -> bool:
    """A DaemonSet pod or a static (mirror) pod: it runs on the node whatever is queued."""
    meta = pod.get("metadata") or {}
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return True
    return any(
        isinstance(ref, Mapping) and ref.get("kind") in ("DaemonSet", "Node")
        for ref in meta.get("ownerReferences") or []
    )


@dataclass(frozen=True)
class Usage:
    """Per node: what all running pods request, and what the resident ones request."""

    used: Mapping[str, Mapping[str, int]]
    resident: Mapping[str, Mapping[str, int]]


def is_tas_pod(pod: Mapping[str, Any]) -> bool:
    """A pod with a ``kueue.x-k8s.io/podset-*-topology`` annotation (kueue ``IsTAS``)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return any(k in annotations for k in TAS_POD_ANNOTATIONS)


def usage_by_node(
    pods: Iterable[Mapping[str, Any]], where: str = "pod", *, skip_tas: bool = False
) -> Usage:
    """Requests of every non-terminated bound pod, summed per node, plus ``pods: 1`` each.

    With ``skip_tas``, TAS pods are left out: Kueue counts them through their Workloads'
    topology assignments instead (its non-TAS usage cache skips them).
    """
    usage: dict[str, dict[str, int]] = {}
    resident: dict[str, dict[str, int]] = {}
    for i, pod in enumerate(pods):
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not node or phase in TERMINATED_PHASES or (skip_tas and is_tas_pod(pod)):
            continue
        meta = pod.get("metadata") or {}
        label = f"{where} {meta.get('namespace', '')}/{meta.get('name', f'#{i}')}".rstrip()
        reqs = pod_requests(pod, label)
        reqs[PODS] = reqs.get(PODS, 0) + 1
        _add(usage.setdefault(str(node), {}), reqs)
        if is_resident(pod):
            _add(resident.setdefault(str(node), {}), reqs)
    return Usage(used=usage, resident=resident)


WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"  # on every pod of a Kueue Workload
Running = Mapping[tuple[str, str], Mapping[str, int]]


def running_by_workload(pods: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, int]]:
    """(namespace, Workload) → node → its pods there that have neither ended nor are being
    deleted: what Kueue's node controller waits for before it marks a NotReady node failed."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        wl = (meta.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not wl or not node or phase in TERMINATED_PHASES or meta.get("deletionTimestamp"):
            continue
        per_node = out.setdefault((str(meta.get("namespace") or ""), str(wl)), {})
        per_node[str(node)] = per_node.get(str(node), 0) + 1
    return out


def with_usage(nodes: Iterable[Node], usage: Usage) -> list[Node]:
    """Attach the usage computed by ``usage_by_node`` to each node."""
    out = []
    for n in nodes:
        used = dict(n.used)
        _add(used, usage.used.get(n.name, {}))
        resident = dict(n.resident)
        _add(resident, usage.resident.get(n.name, {}))
        out.append(replace(n, used=used, resident=resident))
    return out


@dataclass(frozen=True)
class Snapshot:
    """Nodes with their usage, ready for the simulator; ``ignored`` counts other kinds."""

    nodes: tuple[Node, ...]
    pods: int = 0
    ignored: Mapping[str, int] = field(default_factory=dict)
    kueue: tuple[Mapping[str, Any], ...] = ()
    """Kueue objects found (Workload, Topology, ResourceFlavor, queues), as read."""
    running: Running = field(default_factory=dict)
    """Per Workload, its pods on each node that have not ended (``running_by_workload``)."""
    slices: tuple[SliceDevices, ...] = ()
    """DRA ResourceSlices found (``kubectl get resourceslices``), as their devices."""

    @property
    def workloads(self) -> list[Mapping[str, Any]]:
        return [o for o in self.kueue if o.get("kind") == "Workload"]


def with_pods(
    nodes: Iterable[Node],
    pods: Sequence[Mapping[str, Any]],
    usage: Usage,
    slices: tuple[SliceDevices, ...],
) -> Snapshot:
    """The snapshot of ``nodes`` and the ``pods`` bound to them, whose requests ``usage``
    sums (``usage_by_node``), with ``slices``: how a snapshot file and the cluster are
    read alike."""
    return Snapshot(
        nodes=tuple(with_usage(nodes, usage)),
        pods=len(pods),
        running=running_by_workload(pods),
        slices=slices,
    )


KUEUE_KINDS = ("Workload", "Topology", "ResourceFlavor", "LocalQueue", "ClusterQueue")


def snapshot_from_objects(
    doc: Any, origin: str, *, tas_pods_via_workloads: bool | None = None
) -> Snapshot:
    """A Kubernetes ``List`` (or NodeList/PodList, or a list of objects) → Snapshot.

    Every problem is reported at once, naming the item and the object. TAS pods are left
    to their Workloads (see ``usage_by_node``) when the snapshot has Workloads, unless
    ``tas_pods_via_workloads`` says otherwise.
    """
    items = items_of(doc, origin)
    node_objs: list[tuple[str, Mapping[str, Any]]] = []
    pod_objs: list[Mapping[str, Any]] = []
    kueue: list[Mapping[str, Any]] = []
    slices: list[SliceDevices] = []
    ignored: dict[str, int] = {}
    problems: list[str] = []
    for i, item in enumerate(items):
        where = f"{origin}: items[{i}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where}: expected an object, got {type(item).__name__}")
            continue
        kind = item.get("kind")
        if kind == "Node":
            node_objs.append((where, item))
        elif kind == "Pod":
            pod_objs.append(item)
        elif kind in KUEUE_KINDS:
            kueue.append(item)
        elif kind == "ResourceSlice":
            try:
                slices.append(read_slice(item, where))
            except InputError as e:
                problems.extend(e.problems)
        else:
            ignored[str(kind)] = ignored.get(str(kind), 0) + 1
    nodes: list[Node] = []
    seen: dict[str, str] = {}
    for where, obj in node_objs:
        try:
            node = node_from_object(obj, where)
        except InputError as e:
            problems.extend(e.problems)
            continue
        if node.name in seen:
            problems.append(f"{where}: node {node.name} appears twice (first at {seen[node.name]})")
            continue
        seen[node.name] = where
        nodes.append(node)
    if tas_pods_via_workloads is None:
        tas_pods_via_workloads = any(o.get("kind") == "Workload" for o in kueue)
    try:
        usage = usage_by_node(pod_objs, f"{origin}: pod", skip_tas=tas_pods_via_workloads)
    except InputError as e:
        problems.extend(e.problems)
        usage = Usage({}, {})
    if problems:
        raise InputError(problems, heading=f"{origin}: invalid snapshot:")
    if not nodes:  # a wrong file or command, not an empty cluster
        raise InputError(
            f"{origin}: no nodes in the snapshot; make one with: "
            "kubectl get nodes,pods -A -o yaml > snapshot.yaml"
        )
    return replace(
        with_pods(nodes, pod_objs, usage, tuple(slices)), ignored=ignored, kueue=tuple(kueue)
    )


def items_of(doc: Any, origin: str) -> list[Any]:
    """The objects of a List, a typed list (NodeList: items get their kind), a YAML stream of
    either, or one object."""
    if isinstance(doc, list):
        out: list[Any] = []
        for d in doc:  # a multi-document YAML stream: each a List or an object
            if isinstance(d, Mapping) and isinstance(d.get("items"), list):
                out.extend(d["items"])
            elif d is not None:
                out.append(d)
        return out
    if isinstance(doc, Mapping):
        if isinstance(doc.get("items"), list):
            kind = str(doc.get("kind", ""))
            items = list(doc["items"])
            if kind.endswith("List") and kind not in ("List",):
                # NodeList/PodList items carry no kind of their own
                inner = kind[: -len("List")]
                items = [
                    {**it, "kind": it.get("kind", inner)} if isinstance(it, Mapping) else it
                    for it in items
                ]
            return items
        if "kind" in doc:
            return [doc]
    raise InputError(
        f"{origin}: not a Kubernetes List of Nodes and Pods "
        "(make one with: kubectl get nodes,pods -A -o yaml > snapshot.yaml)"
    )
