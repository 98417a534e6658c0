"""The resource types the fake serves, with the discovery facts kubectl and clients read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .kueue_rules import validate_resource_flavor, validate_topology
from .validation import FieldError, validate_resource_slice

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _get(obj: dict[str, Any], dotted: str) -> str:
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


@dataclass(frozen=True, eq=False)  # identity hash: one instance per resource
class Resource:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    # Field selector labels the real server's conversion funcs accept for this kind.
    field_labels: tuple[str, ...] = ()
    custom: bool = False  # served through a CRD: unstructured rules apply
    name_rule: str = "subdomain"
    allow_create_on_update: bool = False
    # DELETE answers the deleted object (pods, namespaces, ResourceSlices); otherwise a
    # Success Status, as for nodes and every custom resource.
    delete_returns_object: bool = False
    # The server keeps metadata.generation (1 on create, +1 when the spec changes), as for
    # every custom resource; built-in kinds opt in.
    tracks_generation: bool = False
    # The kind's own validation (object, old object on update) beyond metadata.
    validate: Callable[[dict[str, Any], dict[str, Any] | None], list[FieldError]] | None = None
    # The kind's field label conversion func names its GroupVersionKind when it refuses.
    field_error_names_kind: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """schema.GroupResource.String(): `nodes`, `topologies.kueue.x-k8s.io`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def supports_field(self, label: str) -> bool:
        base = ("metadata.name", "metadata.namespace") if self.namespaced else ("metadata.name",)
        return label in base or label in self.field_labels

    def unsupported_field(self, label: str) -> str:
        """The refusal of a field selector on ``label``: most kinds' conversion funcs say
        "field label not supported: <f>"; those registered with the kind's GroupVersionKind
        (resource.k8s.io) name it."""
        if self.field_error_names_kind:
            gvk = f"{self.group}/{self.version}, Kind={self.kind}"
            return f"field label not supported for {gvk}: {label}"
        return f"field label not supported: {label}"

    def fields(self, obj: dict[str, Any]) -> dict[str, str]:
        labels = ["metadata.name", *self.field_labels]
        if self.namespaced:
            labels.append("metadata.namespace")
        return {lbl: _get(obj, lbl) for lbl in labels}

    def discovery(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": ALL_VERBS,
        }
        if self.short_names:
            out["shortNames"] = list(self.short_names)
        return out


# Field labels from pkg/registry/core/*/strategy.go (ToSelectableFields / GetAttrs).
NODES = Resource("", "v1", "nodes", "node", "Node", False, ("no",), ("spec.unschedulable",))
PODS = Resource(
    "",
    "v1",
    "pods",
    "pod",
    "Pod",
    True,
    ("po",),
    (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    delete_returns_object=True,
)
EVENTS = Resource(
    "",
    "v1",
    "events",
    "event",
    "Event",
    True,
    ("ev",),
    (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    allow_create_on_update=True,
)
EVENTS_V1 = Resource(
    "events.k8s.io",
    "v1",
    "events",
    "event",
    "Event",
    True,
    ("ev",),
    allow_create_on_update=True,
)
NAMESPACES = Resource(
    "",
    "v1",
    "namespaces",
    "namespace",
    "Namespace",
    False,
    ("ns",),
    ("status.phase",),
    name_rule="label",
    delete_returns_object=True,
)
CONFIGMAPS = Resource("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",))
TOPOLOGIES = Resource(
    "kueue.x-k8s.io",
    "v1beta2",
    "topologies",
    "topology",
    "Topology",
    False,
    ("topo",),
    custom=True,
    validate=validate_topology,
)
RESOURCE_FLAVORS = Resource(
    "kueue.x-k8s.io",
    "v1beta2",
    "resourceflavors",
    "resourceflavor",
    "ResourceFlavor",
    False,
    ("flavor", "flavors", "rf"),
    custom=True,
    validate=validate_resource_flavor,
)
WORKLOADS = Resource(
    "kueue.x-k8s.io",
    "v1beta2",
    "workloads",
    "workload",
    "Workload",
    True,
    ("wl",),
    custom=True,
)
# Kueue's queues (config/components/crd/bases: LocalQueue is namespaced, ClusterQueue not)
LOCAL_QUEUES = Resource(
    "kueue.x-k8s.io",
    "v1beta2",
    "localqueues",
    "localqueue",
    "LocalQueue",
    True,
    ("queue", "queues", "lq"),
    custom=True,
)
CLUSTER_QUEUES = Resource(
    "kueue.x-k8s.io",
    "v1beta2",
    "clusterqueues",
    "clusterqueue",
    "ClusterQueue",
    False,
    ("cq",),
    custom=True,
)
HYPERNODES = Resource(
    "topology.volcano.sh",
    "v1alpha1",
    "hypernodes",
    "hypernode",
    "HyperNode",
    False,
    ("hn",),
    custom=True,
)

# kube-scheduler's Workload API, built-in (not CRDs), Kubernetes 1.37: the group's preferred
# version is v1 (PriorityClass), PodGroups are served as v1beta1, CompositePodGroups as v1alpha3
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", False, ("pc",)
)
POD_GROUPS = Resource("scheduling.k8s.io", "v1beta1", "podgroups", "podgroup", "PodGroup", True)
COMPOSITE_POD_GROUPS = Resource(
    "scheduling.k8s.io",
    "v1alpha3",
    "compositepodgroups",
    "compositepodgroup",
    "CompositePodGroup",
    True,
)

# pkg/registry/resource/resourceslice: cluster-scoped, no short name; toSelectableFields
# offers spec.nodeName ("" when unset) and spec.driver; ReturnDeletedObject.
RESOURCE_SLICES = Resource(
    "resource.k8s.io",
    "v1",
    "resourceslices",
    "resourceslice",
    "ResourceSlice",
    False,
    (),
    # pkg/apis/resource/v1 conversion.go (1.37): spec.nodeName, spec.driver, spec.pool.name.
    ("spec.nodeName", "spec.driver", "spec.pool.name"),
    delete_returns_object=True,
    tracks_generation=True,
    validate=validate_resource_slice,
    field_error_names_kind=True,
)

# --- Volcano's scheduling objects (advise for Volcano): CRDs as Volcano installs
# them (scope, names and short names from its CRD manifests). Their status subresources
# (queues, jobs) are not served: the advisor only reads them.
VOLCANO_QUEUES = Resource(
    "scheduling.volcano.sh",
    "v1beta1",
    "queues",
    "queue",
    "Queue",
    False,
    ("q", "queue-v1beta1"),
    custom=True,
)
VOLCANO_PODGROUPS = Resource(
    "scheduling.volcano.sh",
    "v1beta1",
    "podgroups",
    "podgroup",
    "PodGroup",
    True,
    ("pg", "podgroup-v1beta1"),
    custom=True,
)
VOLCANO_JOBS = Resource(
    "batch.volcano.sh",
    "v1alpha1",
    "jobs",
    "job",
    "Job",
    True,
    ("vcjob", "vj"),
    custom=True,
)

RESOURCES: list[Resource] = [
    NODES,
    PODS,
    EVENTS,
    NAMESPACES,
    CONFIGMAPS,
    EVENTS_V1,
    TOPOLOGIES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    LOCAL_QUEUES,
    CLUSTER_QUEUES,
    HYPERNODES,
    PRIORITY_CLASSES,
    POD_GROUPS,
    COMPOSITE_POD_GROUPS,
    RESOURCE_SLICES,
    VOLCANO_QUEUES,
    VOLCANO_PODGROUPS,
    VOLCANO_JOBS,
]

BY_KIND: dict[str, Resource] = {}
for _r in RESOURCES:
    # Lookup by kind, plural or "plural.group" for the Python helpers.
    BY_KIND.setdefault(_r.kind, _r)
    BY_KIND.setdefault(_r.plural, _r)
    BY_KIND[_r.group_resource] = _r


def lookup(kind: str) -> Resource:
    try:
        return BY_KIND[kind]
    except KeyError:
        raise KeyError(f"unknown kind/resource {kind!r}; known: {sorted(BY_KIND)}") from None


def find(group: str, version: str, plural: str) -> Resource | None:
    for r in RESOURCES:
        if r.group == group and r.version == version and r.plural == plural:
            return r
    return None


def group_versions() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in out.setdefault(r.group, []):
            out[r.group].append(r.version)
    return out


FieldFn = Callable[[dict[str, Any]], dict[str, str]]
