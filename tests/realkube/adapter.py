"""The real API server behind the surface of ``FakeKube`` that the fake's contract tests use,
so that each contract test runs against both and proves the fake right.

The session's control plane is shared: :meth:`RealKube.reset` gives a contract test a clean
view by deleting every node, pod, Event and object of the kinds the fake serves that an
earlier test left (the contract tests assert exact lists). Namespaces stay: without a
kube-controller-manager a deleted namespace stays Terminating for ever.

The direct helpers (``add_node``, ``update_object``...) do through the API what the fake
does to its store: a Node gets its status through the status subresource as a kubelet
would, and a status change goes through ``/status`` when the kind has that subresource.
"""

from __future__ import annotations

import concurrent.futures
import copy
import json
import shutil
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.client import HTTPResponse
from pathlib import Path
from typing import Any

import kubernetes

from tests.fakekube import FakeKube
from tests.fakekube.resources import Resource, lookup
from tests.realkube.controlplane import ControlPlane

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"

# What reset() empties, as (apiVersion path, plural, namespaced). Nodes first: pods and
# slices name them. Namespaces are left alone (see the module's docstring).
RESET = (
    ("api/v1", "nodes", False),
    ("api/v1", "pods", True),
    ("api/v1", "events", True),
    ("api/v1", "configmaps", True),
    ("apis/kueue.x-k8s.io/v1beta2", "workloads", True),
    ("apis/kueue.x-k8s.io/v1beta2", "localqueues", True),
    ("apis/kueue.x-k8s.io/v1beta2", "clusterqueues", False),
    ("apis/kueue.x-k8s.io/v1beta2", "resourceflavors", False),
    ("apis/kueue.x-k8s.io/v1beta2", "topologies", False),
    ("apis/topology.volcano.sh/v1alpha1", "hypernodes", False),
    ("apis/scheduling.volcano.sh/v1beta1", "podgroups", True),
    ("apis/scheduling.volcano.sh/v1beta1", "queues", False),
    ("apis/batch.volcano.sh/v1alpha1", "jobs", True),
    ("apis/scheduling.k8s.io/v1beta1", "podgroups", True),
    ("apis/scheduling.k8s.io/v1alpha3", "compositepodgroups", True),
    ("apis/resource.k8s.io/v1", "resourceslices", False),
)
# The API server's own ConfigMaps, which reset() keeps.
SYSTEM_CONFIGMAPS = {
    ("kube-system", "extension-apiserver-authentication"),
    ("kube-system", "kube-apiserver-legacy-service-account-token-tracking"),
    ("kube-public", "cluster-info"),
}
# Kinds whose status only changes through the status subresource on a real server.
STATUS_SUBRESOURCE = {"Node", "Pod", "Workload", "LocalQueue", "ClusterQueue", "PodGroup",
                      "Queue", "Job", "CompositePodGroup"}  # fmt: skip


class RealKubeError(RuntimeError):
    """A request of the adapter's own that the real server refused."""


class RealKube:
    """A real API server with the helpers of ``FakeKube`` (no journal, faults or latency:
    those stay the fake's)."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self._client = kubernetes.config.new_client_from_config(config_file=str(plane.kubeconfig))
        self._pool = self._client.rest_client.pool_manager
        self._ssl = ssl.create_default_context(cafile=str(plane.ca.cert))
        self._ssl.load_cert_chain(str(plane.pki / "admin.crt"), str(plane.pki / "admin.key"))

    # ------------------------------------------------------------------ clients

    @property
    def url(self) -> str:
        return self.plane.server

    @property
    def version(self) -> tuple[int, int, int]:
        info = self.request("GET", "/version")
        major, minor, patch = info["gitVersion"].lstrip("v").split("-")[0].split(".")
        return int(major), int(minor), int(patch)

    def api_client(self) -> Any:
        """A kubernetes.client.ApiClient as the admin (client certificate)."""
        return kubernetes.config.new_client_from_config(config_file=str(self.plane.kubeconfig))

    def write_kubeconfig(self, path: str | Path, context: str = "realkube") -> Path:
        return Path(shutil.copyfile(self.plane.kubeconfig, path))

    def urlopen(self, request: str | urllib.request.Request, timeout: float = 5) -> HTTPResponse:
        """urllib.request.urlopen with the admin's client certificate."""
        answer: HTTPResponse = urllib.request.urlopen(request, timeout=timeout, context=self._ssl)
        return answer

    def request(self, method: str, path: str, body: Any = None, **headers: str) -> Any:
        """One request as the admin; the decoded JSON answer. A status >= 400 raises."""
        data = None if body is None else json.dumps(body).encode()
        head = {"Accept": "application/json", "Content-Type": "application/json", **headers}
        answer = self._pool.request(method, self.url + path, body=data, headers=head)
        if answer.status >= 400:
            raise RealKubeError(f"{method} {path}: {answer.status} {answer.data.decode()[:500]}")
        return json.loads(answer.data) if answer.data else None

    def _status(self, method: str, path: str) -> int:
        return int(self._pool.request(method, self.url + path).status)

    # ------------------------------------------------------------------ a clean view

    def reset(self) -> None:
        """Delete what earlier tests left: every node, pod, Event, custom object of the
        served kinds, and every ConfigMap the API server did not make itself."""
        for prefix, plural, namespaced in RESET:
            for item in self._leftovers(prefix, plural):
                meta = item["metadata"]
                where = f"/namespaces/{meta['namespace']}" if namespaced else ""
                path = f"/{prefix}{where}/{plural}/{meta['name']}"
                if meta.get("finalizers"):  # no controller here would ever remove them
                    clear = {"metadata": {"finalizers": None}}
                    self.request("PATCH", path, clear, **{"Content-Type": MERGE})
                if self._status("DELETE", path + "?gracePeriodSeconds=0") not in (200, 202, 404):
                    raise RealKubeError(f"reset could not delete {path}")
        self._wait_empty()

    def _leftovers(self, prefix: str, plural: str) -> list[Obj]:
        items: list[Obj] = self.request("GET", f"/{prefix}/{plural}")["items"]
        return [
            i
            for i in items
            if plural != "configmaps"
            or (i["metadata"]["namespace"], i["metadata"]["name"]) not in SYSTEM_CONFIGMAPS
        ]

    def _wait_empty(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        left: list[str] = []
        while time.monotonic() < deadline:
            left = [
                f"{plural}/{item['metadata']['name']}"
                for prefix, plural, _ in RESET
                for item in self._leftovers(prefix, plural)
            ]
            if not left:
                return
            time.sleep(0.1)
        raise RealKubeError(f"reset: still present after {timeout:.0f} s: {left[:10]}")

    # ------------------------------------------------------------------ paths

    @staticmethod
    def _path(res: Resource, namespace: str | None, name: str | None = None) -> str:
        base = f"/api/{res.version}" if not res.group else f"/apis/{res.group}/{res.version}"
        where = f"/namespaces/{namespace}" if res.namespaced and namespace else ""
        tail = f"/{urllib.parse.quote(name)}" if name else ""
        return f"{base}{where}/{res.plural}{tail}"

    # ------------------------------------------------------------------ nodes

    def add_node(self, name: str, **kwargs: Any) -> Obj:
        """A node as ``FakeKube.add_node`` makes it: created, then its status written
        through the status subresource as a kubelet does."""
        node = FakeKube.make_node(name, **kwargs)
        status = node.pop("status")
        self.request("POST", "/api/v1/nodes", node)
        out: Obj = self.request(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            {"status": status},
            **{"Content-Type": MERGE},
        )
        return out

    def seed_nodes(
        self,
        n: int,
        name_fmt: str = "node-{:05d}",
        labels_fn: Callable[[int], dict[str, str]] | None = None,
        allocatable: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Create n nodes, eight requests at a time. Returns their names."""
        names = [name_fmt.format(i) for i in range(n)]

        def one(i: int) -> None:
            labels = labels_fn(i) if labels_fn else None
            self.add_node(names[i], labels=labels, allocatable=allocatable, **kwargs)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(n)))
        return names

    def get_node(self, name: str) -> Obj:
        return self.get_object("Node", name)

    def update_node(self, name: str, fn: Callable[[Obj], Obj | None]) -> Obj:
        return self.update_object("Node", name, fn)

    def set_node_labels(self, name: str, labels: dict[str, str | None]) -> Obj:
        """Merge labels into the node; a None value removes that label."""
        out: Obj = self.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            {"metadata": {"labels": labels}},
            **{"Content-Type": MERGE},
        )
        return out

    def delete_node(self, name: str) -> None:
        self.request("DELETE", f"/api/v1/nodes/{name}")

    def node_labels(self) -> dict[str, dict[str, str]]:
        return {
            o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
            for o in self.objects("Node")
        }

    # ------------------------------------------------------------------ pods

    def add_pod(
        self,
        name: str,
        namespace: str = "default",
        node_name: str | None = None,
        labels: dict[str, str] | None = None,
        phase: str = "Running",
        annotations: dict[str, str] | None = None,
        containers: list[dict[str, Any]] | None = None,
    ) -> Obj:
        """A pod as ``FakeKube.add_pod`` makes it; its phase set through ``/status`` as the
        kubelet would."""
        meta: Obj = {"name": name, "namespace": namespace, "labels": labels or {}}
        if annotations:
            meta["annotations"] = annotations
        spec: Obj = {"containers": containers or [{"name": "main", "image": "busybox"}]}
        if node_name:
            spec["nodeName"] = node_name
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        self.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        out: Obj = self.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"status": {"phase": phase}},
            **{"Content-Type": MERGE},
        )
        return out

    # ------------------------------------------------------------------ any served kind

    def add_object(self, kind: str, obj: Obj, namespace: str | None = None) -> Obj:
        """Create any kind the fake serves. A Namespace that exists already is kept (the
        session's cluster outlives a test, and namespaces cannot be deleted here)."""
        res = lookup(kind)
        ns = namespace or obj.get("metadata", {}).get("namespace") or "default"
        body = {"apiVersion": res.api_version, "kind": res.kind, **copy.deepcopy(obj)}
        if res.kind == "Namespace":
            name = obj["metadata"]["name"]
            if self._status("GET", f"/api/v1/namespaces/{name}") == 200:
                return self.get_object("Namespace", name)
        status = body.pop("status", None)
        out: Obj = self.request("POST", self._path(res, ns), body)
        if status and res.kind in STATUS_SUBRESOURCE:
            out = self._write_status(res, ns, out, status)
        return out

    def get_object(self, kind: str, name: str, namespace: str = "default") -> Obj:
        res = lookup(kind)
        out: Obj = self.request("GET", self._path(res, namespace, name))
        out.setdefault("apiVersion", res.api_version)
        out.setdefault("kind", res.kind)
        return out

    def update_object(
        self, kind: str, name: str, fn: Callable[[Obj], Obj | None], namespace: str = "default"
    ) -> Obj:
        """GET, apply fn, PUT; a status change goes through ``/status`` where the kind
        has that subresource. A conflict with another writer retries."""
        res = lookup(kind)
        for _ in range(5):
            old = self.get_object(kind, name, namespace)
            mine = copy.deepcopy(old)
            out = fn(mine)
            new = mine if out is None else out
            try:
                done: Obj = self.request("PUT", self._path(res, namespace, name), new)
                if res.kind in STATUS_SUBRESOURCE and new.get("status") != old.get("status"):
                    done = self._write_status(res, namespace, done, new.get("status") or {})
                return done
            except RealKubeError as err:
                if ": 409 " not in str(err):
                    raise
        raise RealKubeError(f"update of {kind} {name}: five conflicts in a row")

    def _write_status(self, res: Resource, namespace: str, obj: Obj, status: Obj) -> Obj:
        body = {**obj, "status": status}
        name = obj["metadata"]["name"]
        out: Obj = self.request("PUT", self._path(res, namespace, name) + "/status", body)
        return out

    def delete_object(self, kind: str, name: str, namespace: str = "default") -> None:
        self.request("DELETE", self._path(lookup(kind), namespace, name))

    def objects(self, kind: str, namespace: str | None = None) -> list[Obj]:
        res = lookup(kind)
        items: list[Obj] = self.request("GET", self._path(res, namespace))["items"]
        for item in items:
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", res.kind)
        return items


# Either server behind the contract tests' ``api`` fixture.
Kube = FakeKube | RealKube
