"""Read Volcano's objects as plain JSON: HyperNodes, Queues, PodGroups, the scheduler's
ConfigMap.

A cluster without Volcano's CRDs answers 404 for their paths; that is "no such objects"
(an empty list), so the caller can still say what the cluster lacks. The scheduler's
configuration lives in the ConfigMap the Helm chart installs,
``volcano-system/volcano-scheduler-configmap``; a missing one is None.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from labeler.kube.client import Api
from labeler.kube.errors import NotFound
from labeler.kube.raw import call_json, list_pages

TOPOLOGY = ("topology.volcano.sh", "v1alpha1")
SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
BATCH = ("batch.volcano.sh", "v1alpha1")


def _list(api: Api, group: tuple[str, str], plural: str, kind: str) -> list[dict[str, Any]]:
    g, v = group
    items: list[dict[str, Any]] = []
    try:
        for doc in list_pages(api, f"/apis/{g}/{v}/{plural}", resource=f"{plural}.{g}"):
            items.extend(doc.get("items") or [])
    except NotFound:
        return []
    return [{**it, "kind": it.get("kind") or kind, "apiVersion": f"{g}/{v}"} for it in items]


def list_volcano_objects(api: Api) -> list[dict[str, Any]]:
    """Every HyperNode and Queue, and every PodGroup of every namespace."""
    return [
        *_list(api, TOPOLOGY, "hypernodes", "HyperNode"),
        *_list(api, SCHEDULING, "queues", "Queue"),
        *_list(api, SCHEDULING, "podgroups", "PodGroup"),
    ]


def _get(api: Api, path: str, resource: str) -> dict[str, Any]:
    obj: dict[str, Any] = call_json(lambda: api.send("GET", path), verb="get", resource=resource)
    return obj


def get_podgroup(api: Api, namespace: str, name: str) -> dict[str, Any]:
    """One Volcano PodGroup; NotFound names it."""
    g, v = SCHEDULING
    path = f"/apis/{g}/{v}/namespaces/{quote(namespace, safe='')}/podgroups/{quote(name, safe='')}"
    obj = _get(api, path, f"podgroups.{g}/{namespace}/{name}")
    return {**obj, "kind": "PodGroup", "apiVersion": f"{g}/{v}"}


def get_configmap(api: Api, namespace: str, name: str) -> dict[str, Any] | None:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/configmaps/{quote(name, safe='')}"
    try:
        return {**_get(api, path, f"configmaps/{namespace}/{name}"), "kind": "ConfigMap"}
    except NotFound:
        return None
