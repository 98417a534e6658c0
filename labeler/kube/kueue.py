"""Read Kueue's objects (Workloads, Topologies, ResourceFlavors, queues) as plain JSON.

The served version is tried newest first (v1beta2, then v1beta1): both spell the fields
``advise`` reads the same way, except the topology assignment, which the simulator reads
in either encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import quote

from labeler.kube.client import Api
from labeler.kube.errors import NotFound
from labeler.kube.raw import call_json, list_pages, watch_events

GROUP = "kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")
T = TypeVar("T")


def _newest(read: Callable[[str], T]) -> T:
    """``read(version)`` for the newest version the server serves."""
    last: NotFound | None = None
    for version in VERSIONS:
        try:
            return read(version)
        except NotFound as e:
            last = e
    assert last is not None
    raise last


def _list_all(api: Api, plural: str, kind: str) -> list[dict[str, Any]]:
    def read(version: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        path = f"/apis/{GROUP}/{version}/{plural}"
        for doc in list_pages(api, path, resource=f"{plural}.{GROUP}"):
            items.extend(doc.get("items") or [])
        return [{**it, "kind": it.get("kind") or kind} for it in items]

    return _newest(read)


def list_kueue_objects(api: Api) -> list[dict[str, Any]]:
    """Every Workload and LocalQueue (all namespaces), Topology, ResourceFlavor and
    ClusterQueue."""
    out: list[dict[str, Any]] = []
    for plural, kind in (
        ("workloads", "Workload"),
        ("topologies", "Topology"),
        ("resourceflavors", "ResourceFlavor"),
        ("localqueues", "LocalQueue"),
        ("clusterqueues", "ClusterQueue"),
    ):
        out += _list_all(api, plural, kind)
    return out


def get_workload(api: Api, namespace: str, name: str) -> dict[str, Any]:
    """One Workload; NotFound names it when no served version has it."""

    def read(version: str) -> dict[str, Any]:
        path = (
            f"/apis/{GROUP}/{version}/namespaces/{quote(namespace, safe='')}"
            f"/workloads/{quote(name, safe='')}"
        )
        # Read whole by Api.send; the answer must be that Workload (labeler.kube.answer).
        obj: dict[str, Any] = call_json(
            lambda: api.send("GET", path, name=name),
            verb="get",
            resource=f"workloads.{GROUP}/{namespace}/{name}",
        )
        return {**obj, "kind": obj.get("kind") or "Workload"}

    return _newest(read)


def list_workloads(api: Api, *, page_size: int = 500) -> tuple[list[dict[str, Any]], str, str]:
    """Every Workload (all namespaces), the list's resourceVersion and the API version
    served, to watch from (NotFound where Kueue is not installed)."""

    def read(version: str) -> tuple[list[dict[str, Any]], str, str]:
        items: list[dict[str, Any]] = []
        rv = ""
        path = f"/apis/{GROUP}/{version}/workloads"
        for doc in list_pages(api, path, resource=f"workloads.{GROUP}", page_size=page_size):
            items.extend({**it, "kind": "Workload"} for it in doc.get("items") or [])
            rv = rv or str((doc.get("metadata") or {}).get("resourceVersion") or "")
        return items, rv, version

    return _newest(read)


def watch_workloads(
    api: Api, *, version: str, resource_version: str, timeout_seconds: int = 300
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event type, Workload) from one WATCH of every namespace; Expired on 410."""
    path = f"/apis/{GROUP}/{version}/workloads"
    events = watch_events(
        api,
        path,
        resource=f"workloads.{GROUP}",
        resource_version=resource_version,
        timeout_seconds=timeout_seconds,
    )
    for kind, obj in events:
        yield kind, {**obj, "kind": obj.get("kind") or "Workload"}


def list_topology_objects(api: Api) -> list[dict[str, Any]]:
    """Every Topology and ResourceFlavor: what a flavor's tree is built from."""
    return _list_all(api, "topologies", "Topology") + _list_all(
        api, "resourceflavors", "ResourceFlavor"
    )
