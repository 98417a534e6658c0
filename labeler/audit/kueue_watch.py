"""The exporter's view of Kueue: admitted Workloads from a LIST + WATCH, and the nodes'
capacity records from the node watch; what the hot-swap view is computed from.

Loop (as for nodes): LIST every Workload (and the Topologies and ResourceFlavors) → WATCH
from the list's resourceVersion → on a normal end, WATCH again, re-reading the Topologies
and ResourceFlavors (a few objects, once per ``--watch-timeout``, and when a Workload is
admitted to a flavor not read yet); on 410, LIST again. Where
Kueue is not installed (404) the exporter goes on with nodes only and looks again every
``absent_retry`` seconds. A failure keeps the last good state. No scrape reads the API.

Only Workloads with ``status.admission`` are kept, without ``managedFields``: a pending
Workload holds no node.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from labeler.base.backoff import Backoff
from labeler.core.capacity import Node, node_from_info
from labeler.core.node import NodeInfo
from labeler.kube.errors import Expired, KubeError, NotFound
from labeler.kube.kueue import list_topology_objects, list_workloads, watch_workloads

log = logging.getLogger(__name__)
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
        """Does the Workload's admission name a ResourceFlavor not read yet?"""
        admission = (obj.get("status") or {}).get("admission") or {}
        named = {
            str(f)
            for psa in admission.get("podSetAssignments") or []
            for f in ((psa or {}).get("flavors") or {}).values()
        }
        with self._lock:
            known = {
                str((o.get("metadata") or {}).get("name"))
                for o in self._topology
                if o.get("kind") == "ResourceFlavor"
            }
        return not named <= known

    def absent(self) -> None:
        with self._lock:
            self.served, self._workloads, self._topology = False, {}, []
        self.changed.set()

    def snapshot(self) -> tuple[list[Node], list[dict[str, Any]]]:
        """The nodes and Kueue's objects (Workloads, Topologies, ResourceFlavors)."""
        with self._lock:
            return list(self._nodes.values()), [*self._topology, *self._workloads.values()]


def watch_kueue(
    api: Any,
    store: KueueStore,
    stop: threading.Event,
    *,
    timeout: int,
    failed: Callable[[str, str], None],
    first_backoff: float = 1.0,
    max_backoff: float = 30.0,
    absent_retry: float = 300.0,
) -> None:
    """Keep ``store``'s Workloads current until ``stop``; ``failed(kind, message)`` is
    told of every failed call."""
    rv: str | None = None
    version = ""
    read = -TOPOLOGY_REREAD  # when an unknown flavor last made us read them again
    backoff = Backoff(first_backoff, max_backoff)
    failures = 0
    while not stop.is_set():
        try:
            if rv is None:
                items, rv, version = list_workloads(api)
                store.replace_workloads(items)
                log.info("listed admitted Workloads=%d rv=%s", len(store.snapshot()[1]), rv)
            store.set_topology(list_topology_objects(api))
            for kind, obj in watch_workloads(
                api, version=version, resource_version=rv, timeout_seconds=timeout
            ):
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                store.apply_workload(kind, obj)
                # a Workload admitted to a flavor created since: read the flavors again
                # (at most once per TOPOLOGY_REREAD seconds)
                if time.monotonic() - read > TOPOLOGY_REREAD and store.unknown_flavor(obj):
                    store.set_topology(list_topology_objects(api))
                    read = time.monotonic()
                if stop.is_set():
                    return
            failures = 0
            continue
        except NotFound:
            if store.served is not False:
                log.info("Kueue's API is not served: the exporter goes on with nodes only")
            store.absent()
            rv = None
            stop.wait(absent_retry)
            continue
        except Expired:
            rv = None
            continue
        except KubeError as e:
            failed(type(e).__name__, str(e))
        except Exception as e:  # a broken stream or a bad event: keep the state, retry
            log.exception("unexpected failure in the Workload watch; retrying")
            failed(type(e).__name__, f"{type(e).__name__}: {e}")
        failures += 1
        stop.wait(backoff.delay(failures))
