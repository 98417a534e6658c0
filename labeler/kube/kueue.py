"""Read Kueue's objects (Workloads, Topologies, ResourceFlavors) as plain JSON.

The served version is tried newest first (v1beta2, then v1beta1): both spell the fields
``advise`` reads the same way, except the topology assignment, which the simulator reads
in either encoding.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from kubernetes import client

from labeler.kube.errors import NotFound
from labeler.kube.raw import call_json, list_pages

GROUP = "kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")


def _list_all(api: client.ApiClient, plural: str, kind: str) -> list[dict[str, Any]]:
    custom = client.CustomObjectsApi(api)
    last: NotFound | None = None
    for version in VERSIONS:
        items: list[dict[str, Any]] = []
        try:
            for doc in list_pages(
                partial(custom.list_cluster_custom_object, GROUP, version, plural),
                resource=f"{plural}.{GROUP}/{version}",
            ):
                items.extend(doc.get("items") or [])
        except NotFound as e:
            last = e
            continue
        return [{**it, "kind": it.get("kind") or kind} for it in items]
    assert last is not None
    raise last


def list_kueue_objects(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every Workload (all namespaces), Topology and ResourceFlavor."""
    out: list[dict[str, Any]] = []
    for plural, kind in (
        ("workloads", "Workload"),
        ("topologies", "Topology"),
        ("resourceflavors", "ResourceFlavor"),
    ):
        out += _list_all(api, plural, kind)
    return out


def get_workload(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    """One Workload; NotFound names it when no served version has it."""
    custom = client.CustomObjectsApi(api)
    last: NotFound | None = None
    for version in VERSIONS:
        try:
            obj: dict[str, Any] = call_json(
                partial(
                    custom.get_namespaced_custom_object,
                    GROUP,
                    version,
                    namespace,
                    "workloads",
                    name,
                    _preload_content=False,
                ),
                verb="get",
                resource=f"workloads.{GROUP}/{namespace}/{name}",
            )
        except NotFound as e:
            last = e
            continue
        obj.setdefault("kind", "Workload")
        return obj
    assert last is not None
    raise last
