"""The exporter's view of Kueue: admitted Workloads from a LIST + WATCH, and the nodes'
capacity records from the node watch; what the hot-swap view is computed from.

The exporter's LIST + WATCH loop (:mod:`labeler.audit.listwatch`) of every Workload; each
WATCH (renewed every ``--watch-timeout``) first re-reads the Topologies and ResourceFlavors
(a few objects), and so does a Workload admitted to a flavor not read yet. Where Kueue is
not installed (404) the exporter goes on with nodes only and looks again every
``Loop.recheck`` seconds.

Only Workloads with ``status.admission`` are kept, without ``managedFields``: a pending
Workload holds no node.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import Counter

from labeler.audit.listwatch import ListWatch, Loop
from labeler.base.logs import logger
from labeler.core.capacity import Node, node_from_info
from labeler.core.node import NodeInfo
from labeler.kube.kueue import list_topology_objects, list_workloads, watch_workloads

log = logger(__name__)
Key = tuple[str, str]
TOPOLOGY_REREAD = 5.0  # seconds


def trim(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """What is kept of a Workload: an admitted one, without its managedFields."""
    if not (obj.get("status") or {}).get("admission"):
        return None
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class KueueStore:
    """Thread-safe inputs of the hot-swap view; ``changed`` is set on every effective
    change."""

    def __init__(self) -> None:
        self.changed = threading.Event()
        self._lock = threading.Lock()
        self._nodes: dict[str, Node] = {}
        self._workloads: dict[Key, dict[str, Any]] = {}
        self._topology: list[dict[str, Any]] = []
        self.served: bool | None = None  # Kueue's API: None until known

    def _node(self, info: NodeInfo) -> Node | None:
        try:
            return node_from_info(info, f"node {info.name}")
        except Exception as e:  # a quantity the simulator cannot read: leave the node out
            log.warning("hot swap: node %s left out: %s", info.name, e)
            return None

    def replace_nodes(self, infos: Iterable[NodeInfo]) -> None:
        fresh = {i.name: n for i in infos if (n := self._node(i)) is not None}
        with self._lock:
            self._nodes = fresh
        self.changed.set()

    def apply_node(self, kind: str, info: NodeInfo) -> None:
        node = self._node(info) if kind in ("ADDED", "MODIFIED") else None
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return
        with self._lock:
            if self._nodes.get(info.name) == node:
                return
            if node is None:
                self._nodes.pop(info.name, None)
            else:
                self._nodes[info.name] = node
        self.changed.set()

    def replace_workloads(self, items: Iterable[Mapping[str, Any]]) -> None:
        fresh = {_key(o): t for o in items if (t := trim(o)) is not None}
        with self._lock:
            self._workloads = fresh
            self.served = True
        self.changed.set()

    def apply_workload(self, kind: str, obj: Mapping[str, Any]) -> None:
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return
        kept = trim(obj) if kind != "DELETED" else None
        key = _key(obj)
        with self._lock:
            if self._workloads.get(key) == kept:
                return
            if kept is None:
                self._workloads.pop(key, None)
            else:
                self._workloads[key] = kept
        self.changed.set()

    def set_topology(self, objects: list[dict[str, Any]]) -> None:
        with self._lock:
            same = objects == self._topology
            self._topology = objects
        if not same:
            self.changed.set()

    def unknown_flavor(self, obj: Mapping[str, Any]) -> bool:
        """Does the Workload's admission name a ResourceFlavor not read yet, or one whose
        Topology was not read yet? (Topologies and flavors are two LISTs: a Topology
        created between them is missing until they are read again.)"""
        admission = (obj.get("status") or {}).get("admission") or {}
        named = {
            str(f)
            for psa in admission.get("podSetAssignments") or []
            for f in ((psa or {}).get("flavors") or {}).values()
        }
        with self._lock:
            objects = list(self._topology)
        known: dict[str, set[str]] = {"Topology": set(), "ResourceFlavor": set()}
        topologies: set[str] = set()  # those of the flavors named
        for o in objects:
            kind, name = str(o.get("kind")), str((o.get("metadata") or {}).get("name"))
            known.setdefault(kind, set()).add(name)
            topology = (o.get("spec") or {}).get("topologyName")
            if kind == "ResourceFlavor" and name in named and topology:
                topologies.add(str(topology))
        return not named <= known["ResourceFlavor"] or not topologies <= known["Topology"]

    def absent(self) -> None:
        with self._lock:
            self.served, self._workloads, self._topology = False, {}, []
        self.changed.set()

    def snapshot(self) -> tuple[list[Node], list[dict[str, Any]]]:
        """The nodes and Kueue's objects (Workloads, Topologies, ResourceFlavors)."""
        with self._lock:
            return list(self._nodes.values()), [*self._topology, *self._workloads.values()]


class KueueWatch(ListWatch):
    """Keeps ``store``'s Workloads (and the Topologies and ResourceFlavors) current;
    ``errors`` counts the failed calls by kind."""

    what = "Workload"
    resource = "workloads.kueue.x-k8s.io"
    optional = True  # without Kueue: nodes only

    def __init__(self, api: Any, loop: Loop, store: KueueStore, errors: Counter) -> None:
        super().__init__(api, loop)
        self.store = store
        self.errors = errors
        self.version = ""  # the API version served, found by the LIST
        self.read = -TOPOLOGY_REREAD  # when an unknown flavor last made us read them again

    def relist(self) -> str:
        items, rv, self.version = list_workloads(self.api)
        self.store.replace_workloads(items)
        log.info("listed admitted Workloads=%d rv=%s", len(self.store.snapshot()[1]), rv)
        return rv

    def watch(self, resource_version: str) -> Iterator[str]:
        self.store.set_topology(list_topology_objects(self.api))  # once per renewal
        events = watch_workloads(
            self.api,
            version=self.version,
            resource_version=resource_version,
            timeout_seconds=self.loop.watch_timeout,
            opened=self.opened,
        )
        for kind, obj in events:
            self.store.apply_workload(kind, obj)
            # a Workload admitted to a flavor created since: read the flavors again
            # (at most once per TOPOLOGY_REREAD seconds)
            if time.monotonic() - self.read > TOPOLOGY_REREAD and self.store.unknown_flavor(obj):
                self.store.set_topology(list_topology_objects(self.api))
                self.read = time.monotonic()
            yield str((obj.get("metadata") or {}).get("resourceVersion") or "")

    def absent(self) -> None:
        if self.store.served is not False:
            log.info("Kueue's API is not served: the exporter goes on with nodes only")
        self.store.absent()

    def expired(self) -> None:
        self.errors.labels("expired").inc()

    def failed(self, kind: str, message: str) -> None:
        self.errors.labels(kind).inc()
