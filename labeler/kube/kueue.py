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
from labeler.kube.raw import get_object, list_items, watch_events

GROUP = "kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")
T = TypeVar("T")


def _as(kind: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An item of a LIST of ``kind`` with its kind set (a typed list leaves it out)."""
    return lambda item: {**item, "kind": kind}


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


def list_kueue_kind(api: Api, plural: str, kind: str) -> list[dict[str, Any]]:
    """Every object of one of :data:`KINDS` (all namespaces), each with its kind set."""

    def read(version: str) -> list[dict[str, Any]]:
        path = f"/apis/{GROUP}/{version}/{plural}"
        return list_items(api, path, _as(kind), resource=f"{plural}.{GROUP}", kind=kind)[0]

    return _newest(read)


# (plural, kind) of every Kueue object the simulators read
KINDS = (
    ("workloads", "Workload"),
    ("topologies", "Topology"),
    ("resourceflavors", "ResourceFlavor"),
    ("localqueues", "LocalQueue"),
    ("clusterqueues", "ClusterQueue"),
)


def get_workload(api: Api, namespace: str, name: str) -> dict[str, Any]:
    """One Workload; NotFound names it when no served version has it."""

    def read(version: str) -> dict[str, Any]:
        path = (
            f"/apis/{GROUP}/{version}/namespaces/{quote(namespace, safe='')}"
            f"/workloads/{quote(name, safe='')}"
        )
        resource = f"workloads.{GROUP}/{namespace}/{name}"
        return get_object(
            api, path, kind="Workload", name=name, namespace=namespace, resource=resource
        )

    return _newest(read)


def list_workloads(api: Api, *, page_size: int = 500) -> tuple[list[dict[str, Any]], str, str]:
    """Every Workload (all namespaces), the list's resourceVersion and the API version
    served, to watch from (NotFound where Kueue is not installed)."""

    def read(version: str) -> tuple[list[dict[str, Any]], str, str]:
        path = f"/apis/{GROUP}/{version}/workloads"
        resource = f"workloads.{GROUP}"
        items, rv = list_items(
            api, path, _as("Workload"), resource=resource, kind="Workload", page_size=page_size
        )
        return items, rv, version

    return _newest(read)


def watch_workloads(
    api: Api,
    *,
    version: str,
    resource_version: str,
    timeout_seconds: int = 300,
    opened: Callable[[], None] | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event type, Workload) from one WATCH of every namespace; Expired on 410.
    ``opened``: see :func:`labeler.kube.raw.watch_events`."""
    path = f"/apis/{GROUP}/{version}/workloads"
    events = watch_events(
        api,
        path,
        resource=f"workloads.{GROUP}",
        kind="Workload",
        resource_version=resource_version,
        timeout_seconds=timeout_seconds,
        opened=opened,
    )
    for kind, obj in events:
        yield kind, {**obj, "kind": "Workload"}


def list_topology_objects(api: Api) -> list[dict[str, Any]]:
    """Every Topology and ResourceFlavor: what a flavor's tree is built from."""
    return list_kueue_kind(api, "topologies", "Topology") + list_kueue_kind(
        api, "resourceflavors", "ResourceFlavor"
    )
