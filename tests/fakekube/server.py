"""FakeKube: the fake API server object, its lifecycle and the direct (no-HTTP) helpers."""

from __future__ import annotations

import copy
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .http import Handler, _Server
from .journal import Connections, Faults, Journal, Record
from .resources import NODES, PODS, lookup
from .store import Obj, Store, now_rfc3339


class FakeKube:
    """A Kubernetes API server double on 127.0.0.1 that real clients talk to over HTTP."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_ms: float = 0.0,
        history: int = 1000,
        version: tuple[int, int, int] = (1, 32, 4),
    ) -> None:
        self.host = host
        self.port = port
        self.latency_ms = latency_ms  # applied to every request; settable at runtime
        self.version = version
        self.bookmark_interval = 5.0  # seconds between BOOKMARKs when a watch allows them
        # False: offer no metadata-only answers (as=PartialObjectMetadata[List] in Accept),
        # as servers before 1.15 (v1beta1 only) and some aggregated servers; the Accept's
        # next choice, plain JSON, is served instead. Settable at runtime.
        self.partial_metadata = True
        # Group versions this server does not serve ("resource.k8s.io/v1"), as a cluster
        # before that API or with it turned off: absent from discovery, 404 on every path.
        # Settable at runtime.
        self.unserved: set[str] = set()
        self.store = Store(history)
        self.faults = Faults()
        self.connections = Connections()
        self._journal = Journal()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeKube:
        httpd = _Server((self.host, self.port), Handler)
        httpd.fake = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        with self.store.cond:
            self.store.stopped = True  # ends open watches
            self.store.cond.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def cut_watches(self, plural: str | None = None) -> int:
        """Break every open watch (of ``plural``, e.g. "nodes"; None: all) mid-stream, as
        a network cut or a load balancer's reset does: the connection closes between two
        events, without the chunked answer's last chunk. How many were cut."""
        return self.connections.cut(plural)

    def end_watches(self) -> None:
        """End every open watch as the API server does when a watch's timeoutSeconds runs
        out: the answer's last chunk, then the client may watch again on that connection."""
        with self.store.cond:
            self.store.watches_ended += 1
            self.store.cond.notify_all()

    def go_away(self) -> None:
        """The API server is gone (a restart, an outage): new connections are refused and
        every open one is cut. The state is kept; :meth:`come_back` listens again."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None
        self.connections.cut(watches_only=False)

    def come_back(self) -> FakeKube:
        """Listen again on the same port after :meth:`go_away`."""
        return self.start()

    def __enter__(self) -> FakeKube:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # ------------------------------------------------------------------ clients

    def urlopen(self, request: str | urllib.request.Request, timeout: float = 5) -> Any:
        """urllib.request.urlopen of this server (the real server's adapter adds its
        client certificate here)."""
        return urllib.request.urlopen(request, timeout=timeout)

    def api_client(self) -> Any:
        """A kubernetes.client.ApiClient for this server, without credentials."""
        from kubernetes import client

        cfg = client.Configuration(host=self.url)
        return client.ApiClient(cfg)

    def cluster(self, **kwargs: Any) -> Any:
        """The project's own ``labeler.kube.client.Api`` for this server, without credentials."""
        from labeler.kube.client import for_host

        return for_host(self.url, **kwargs)

    def kubeconfig(self, context: str = "fake") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
            "current-context": context,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, context: str = "fake") -> Path:
        p = Path(path)
        p.write_text(yaml.safe_dump(self.kubeconfig(context), sort_keys=False))
        return p

    # ------------------------------------------------------------------ journal

    @property
    def journal(self) -> list[Record]:
        return self._journal.records

    def clear_journal(self) -> None:
        self._journal.clear()

    def take_journal(self) -> list[Record]:
        """The requests so far, removed from the journal (see ``Journal.take``)."""
        return self._journal.take()

    def requests(
        self, method: str | None = None, path_prefix: str | None = None, verb: str | None = None
    ) -> list[Record]:
        return [
            r
            for r in self._journal.records
            if (method is None or r.method == method.upper())
            and (path_prefix is None or r.path.startswith(path_prefix))
            and (verb is None or r.verb == verb)
        ]

    def count(self, verb: str, path_prefix: str | None = None) -> int:
        return len(self.requests(verb=verb, path_prefix=path_prefix))

    def counts(self) -> dict[str, int]:
        return self._journal.counts()

    # ------------------------------------------------------------------ state helpers

    @staticmethod
    def make_node(
        name: str,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        allocatable: dict[str, str] | None = None,
        capacity: dict[str, str] | None = None,
        taints: list[dict[str, Any]] | None = None,
        ready: bool = True,
        unschedulable: bool = False,
        default_labels: bool = True,
        images: int = 0,
    ) -> Obj:
        """A Node as a kubelet registers it (hostname/os/arch labels, Ready condition).
        ``images``: that many entries in status.images, as a kubelet reports the images it
        holds (a real node lists dozens; they are most of its 10-50 KB)."""
        base = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "1Ti"}
        cap = {**base, **(capacity or allocatable or {})}
        alloc = {**cap, **(allocatable or {})}
        lbl: dict[str, str] = {}
        if default_labels:
            lbl = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
            }
        lbl.update(labels or {})
        ts = now_rfc3339()
        spec: dict[str, Any] = {}
        if taints:
            spec["taints"] = copy.deepcopy(taints)
        if unschedulable:
            spec["unschedulable"] = True
        meta: dict[str, Any] = {"name": name, "labels": lbl}
        status_images = {"images": [_image(i) for i in range(images)]} if images else {}
        if annotations:
            meta["annotations"] = dict(annotations)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": meta,
            "spec": spec,
            "status": {
                "capacity": cap,
                "allocatable": alloc,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "reason": "KubeletReady" if ready else "KubeletNotReady",
                        "message": "kubelet is posting ready status" if ready else "not ready",
                        "lastHeartbeatTime": ts,
                        "lastTransitionTime": ts,
                    }
                ],
                "addresses": [{"type": "Hostname", "address": name}],
                # Every NodeSystemInfo field is required by the client-37 (pydantic) models.
                "nodeInfo": {
                    "architecture": "amd64",
                    "bootID": "00000000-0000-0000-0000-000000000000",
                    "containerRuntimeVersion": "containerd://1.7.27",
                    "kernelVersion": "6.8.0",
                    "kubeProxyVersion": "",
                    "kubeletVersion": "v1.32.4",
                    "machineID": name,
                    "operatingSystem": "linux",
                    "osImage": "Ubuntu 24.04 LTS",
                    "systemUUID": "00000000-0000-0000-0000-000000000000",
                },
                **status_images,
            },
        }

    def add_node(self, name: str, **kwargs: Any) -> Obj:
        """See make_node for keyword arguments.  Returns a copy of the stored Node."""
        return copy.deepcopy(self.store.create(NODES, "", self.make_node(name, **kwargs)))

    def seed_nodes(
        self,
        n: int,
        name_fmt: str = "node-{:05d}",
        labels_fn: Callable[[int], dict[str, str]] | None = None,
        allocatable: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Create n nodes quickly (one store write each, no HTTP).  Returns their names."""
        names = []
        for i in range(n):
            name = name_fmt.format(i)
            node = self.make_node(
                name, labels=labels_fn(i) if labels_fn else None, allocatable=allocatable, **kwargs
            )
            self.store.create(NODES, "", node, trusted=True)
            names.append(name)
        return names

    def get_node(self, name: str) -> Obj:
        return copy.deepcopy(self.store.get(NODES, "", name))

    def update_node(self, name: str, fn: Callable[[Obj], Obj | None]) -> Obj:
        """Apply fn to a copy of the node (mutate in place or return a new dict) and store it."""
        return self.update_object("Node", name, fn)

    def set_node_labels(self, name: str, labels: dict[str, str | None]) -> Obj:
        """Merge labels into the node; a None value removes that label."""

        def fn(obj: Obj) -> Obj:
            cur = obj["metadata"].setdefault("labels", {})
            for k, v in labels.items():
                if v is None:
                    cur.pop(k, None)
                else:
                    cur[k] = v
            return obj

        return self.update_node(name, fn)

    def delete_node(self, name: str) -> None:
        self.store.delete(NODES, "", name)

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
        meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
        if annotations:
            meta["annotations"] = annotations
        spec: dict[str, Any] = {"containers": containers or [{"name": "main", "image": "busybox"}]}
        if node_name:
            spec["nodeName"] = node_name
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        pod["status"] = {"phase": phase}
        return copy.deepcopy(self.store.create(PODS, namespace, pod))

    def add_object(self, kind: str, obj: Obj, namespace: str | None = None) -> Obj:
        """Create any served kind (e.g. "Topology", "hypernodes", "ConfigMap")."""
        res = lookup(kind)
        ns = namespace or obj.get("metadata", {}).get("namespace") or "default"
        return copy.deepcopy(self.store.create(res, ns if res.namespaced else "", obj))

    def get_object(self, kind: str, name: str, namespace: str = "default") -> Obj:
        res = lookup(kind)
        return copy.deepcopy(self.store.get(res, namespace if res.namespaced else "", name))

    def update_object(
        self, kind: str, name: str, fn: Callable[[Obj], Obj | None], namespace: str = "default"
    ) -> Obj:
        res = lookup(kind)

        def wrap(obj: Obj) -> Obj:
            out = fn(obj)
            return obj if out is None else out

        ns = namespace if res.namespaced else ""
        return copy.deepcopy(self.store.mutate(res, ns, name, wrap, manager="fakekube"))

    def delete_object(self, kind: str, name: str, namespace: str = "default") -> None:
        res = lookup(kind)
        self.store.delete(res, namespace if res.namespaced else "", name)

    def objects(self, kind: str, namespace: str | None = None) -> list[Obj]:
        """Deep copies of all stored objects of a kind, in list order."""
        res = lookup(kind)
        return [
            copy.deepcopy(o)
            for o in self.store.all(res)
            if namespace is None or o["metadata"].get("namespace") == namespace
        ]

    def node_labels(self) -> dict[str, dict[str, str]]:
        """name -> labels for every node (cheap snapshot for assertions)."""
        return {
            o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
            for o in self.store.all(NODES)
        }


def _image(i: int) -> dict[str, Any]:
    repo = f"registry.example.com/ml/training-image-{i:03d}"
    digest = f"sha256:{i:064x}"
    return {"names": [f"{repo}@{digest}", f"{repo}:v1.{i}.0"], "sizeBytes": 1_000_000_000 + i}
