"""The one set of object builders the tests share: a Node and a Pod as the API serves them,
said fluently, in the spirit of Kueue's ``pkg/util/testingjobs`` wrappers::

    node("n1").labels({RACK: "r1"}).gpus(8).obj()          # the API object (a dict)
    node("n1").labels(...).owned(RACK).plan_view()          # what a label writer reads
    pod("p1").on("n1").requests(cpu="2").obj()

A builder starts from the smallest valid object (a Ready node with nothing allocatable; a
pending pod with one container and no requests) and each call adds to it; ``obj()`` returns
a fresh copy, so one builder can make several objects.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from labeler.core.node import OWNED_ANNOTATION, SOURCE_IDS_ANNOTATION, NodeInfo, NodeLabels

Obj = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {}},
            "spec": {},
            "status": {"allocatable": {}, "conditions": [{"type": "Ready", "status": "True"}]},
        }

    @property
    def name(self) -> str:
        return str(self._obj["metadata"]["name"])

    def hostname(self) -> NodeBuilder:
        """The ``kubernetes.io/hostname`` label the kubelet sets, equal to the name."""
        self._obj["metadata"]["labels"][HOSTNAME] = self.name
        return self

    def labels(self, labels: Mapping[str, str] | None = None, **more: str) -> NodeBuilder:
        self._obj["metadata"]["labels"].update({**(labels or {}), **more})
        return self

    def annotations(self, annotations: Mapping[str, str]) -> NodeBuilder:
        self._obj["metadata"].setdefault("annotations", {}).update(annotations)
        return self

    def owned(self, *keys: str) -> NodeBuilder:
        """Label keys recorded as topology-labeler's (the ownership annotation)."""
        return self.annotations({OWNED_ANNOTATION: ",".join(keys)}) if keys else self

    def source_ids(self, ids: Mapping[str, str]) -> NodeBuilder:
        return self.annotations({SOURCE_IDS_ANNOTATION: json.dumps(dict(ids))})

    def resource_version(self, version: str) -> NodeBuilder:
        self._obj["metadata"]["resourceVersion"] = version
        return self

    def allocatable(self, resources: Mapping[str, str] | None = None, **more: str) -> NodeBuilder:
        self._obj["status"]["allocatable"].update({**(resources or {}), **more})
        return self

    def gpus(self, count: int, resource: str = "nvidia.com/gpu") -> NodeBuilder:
        return self.allocatable({resource: str(count)})

    def capacity(self) -> NodeBuilder:
        """``status.capacity`` equal to what is allocatable at this point."""
        self._obj["status"]["capacity"] = dict(self._obj["status"]["allocatable"])
        return self

    def pod_cidr(self, cidr: str) -> NodeBuilder:
        self._obj["spec"]["podCIDR"] = cidr
        return self

    def taint(self, key: str, value: str | None = None, effect: str = "NoSchedule") -> NodeBuilder:
        entry = {"key": key, "effect": effect} if value is None else {
            "key": key, "value": value, "effect": effect,
        }  # fmt: skip
        self._obj["spec"].setdefault("taints", []).append(entry)
        return self

    def taints(self, taints: Sequence[Mapping[str, str]]) -> NodeBuilder:
        if taints:
            self._obj["spec"].setdefault("taints", []).extend(dict(t) for t in taints)
        return self

    def ready(self, ready: bool = True) -> NodeBuilder:
        self._obj["status"]["conditions"] = [
            {"type": "Ready", "status": "True" if ready else "False"}
        ]
        return self

    def unschedulable(self, cordoned: bool = True) -> NodeBuilder:
        if cordoned:
            self._obj["spec"]["unschedulable"] = True
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)

    def info(self) -> NodeInfo:
        """The node as the tools read it (labeler.core.node.NodeInfo)."""
        return NodeInfo.from_dict(self._obj)

    def plan_view(self) -> NodeLabels:
        """Only what a label writer looks at: name, labels, annotations, resourceVersion."""
        meta = self._obj["metadata"]
        return NodeLabels(
            meta["name"],
            dict(meta["labels"]),
            dict(meta.get("annotations") or {}),
            str(meta.get("resourceVersion") or ""),
        )


class PodBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {}}}]},
            "status": {"phase": "Pending"},
        }

    def namespace(self, namespace: str) -> PodBuilder:
        self._obj["metadata"]["namespace"] = namespace
        return self

    def uid(self, uid: str | None = None) -> PodBuilder:
        """``metadata.uid``; by default one made of the namespace and the name."""
        meta = self._obj["metadata"]
        meta["uid"] = uid if uid is not None else f"{meta['namespace']}-{meta['name']}"
        return self

    def labels(self, labels: Mapping[str, str] | None = None, **more: str) -> PodBuilder:
        self._obj["metadata"].setdefault("labels", {}).update({**(labels or {}), **more})
        return self

    def annotations(self, annotations: Mapping[str, str]) -> PodBuilder:
        self._obj["metadata"].setdefault("annotations", {}).update(annotations)
        return self

    def on(self, node: str | None, phase: str = "Running") -> PodBuilder:
        """Bound to ``node`` (``spec.nodeName``), in ``phase``; None leaves it unbound."""
        if node:
            self._obj["spec"]["nodeName"] = node
            self._obj["status"]["phase"] = phase
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._obj["status"]["phase"] = phase
        return self

    def requests(self, resources: Mapping[str, str] | None = None, **more: str) -> PodBuilder:
        self._obj["spec"]["containers"][0]["resources"]["requests"].update(
            {**(resources or {}), **more}
        )
        return self

    def node_selector(self, selector: Mapping[str, str] | None) -> PodBuilder:
        if selector:
            self._obj["spec"]["nodeSelector"] = dict(selector)
        return self

    def tolerations(self, tolerations: Sequence[Mapping[str, str]]) -> PodBuilder:
        if tolerations:
            self._obj["spec"]["tolerations"] = [dict(t) for t in tolerations]
        return self

    def scheduling_group(self, group: str | None) -> PodBuilder:
        """kube-scheduler's PodGroup membership (``spec.schedulingGroup``, 1.37)."""
        if group:
            self._obj["spec"]["schedulingGroup"] = {"podGroupName": group}
        return self

    def volcano_group(self, group: str, task: str | None = None) -> PodBuilder:
        """Volcano's PodGroup membership (the group-name annotation) and task, if any."""
        if task is not None:
            self.labels({"volcano.sh/task-spec": task})
        return self.annotations({"scheduling.k8s.io/group-name": group})

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def pod(name: str) -> PodBuilder:
    return PodBuilder(name)
