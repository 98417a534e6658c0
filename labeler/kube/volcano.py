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
from labeler.kube.raw import get_object, list_items

TOPOLOGY = ("topology.volcano.sh", "v1alpha1")
SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
BATCH = ("batch.volcano.sh", "v1alpha1")


def _list(api: Api, group: tuple[str, str], plural: str, kind: str) -> list[dict[str, Any]]:
    g, v = group

    def read(item: dict[str, Any]) -> dict[str, Any]:
        return {**item, "kind": kind, "apiVersion": f"{g}/{v}"}

    try:
        return list_items(
            api, f"/apis/{g}/{v}/{plural}", read, resource=f"{plural}.{g}", kind=kind
        )[0]
    except NotFound:
        return []


def list_volcano_objects(api: Api) -> list[dict[str, Any]]:
    """Every HyperNode and Queue, and every PodGroup of every namespace."""
    return [
        *_list(api, TOPOLOGY, "hypernodes", "HyperNode"),
        *_list(api, SCHEDULING, "queues", "Queue"),
        *_list(api, SCHEDULING, "podgroups", "PodGroup"),
    ]


def get_podgroup(api: Api, namespace: str, name: str) -> dict[str, Any]:
    """One Volcano PodGroup; NotFound names it."""
    g, v = SCHEDULING
    path = f"/apis/{g}/{v}/namespaces/{quote(namespace, safe='')}/podgroups/{quote(name, safe='')}"
    resource = f"podgroups.{g}/{namespace}/{name}"
    obj = get_object(api, path, kind="PodGroup", name=name, namespace=namespace, resource=resource)
    return {**obj, "apiVersion": f"{g}/{v}"}


def get_configmap(api: Api, namespace: str, name: str) -> dict[str, Any] | None:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/configmaps/{quote(name, safe='')}"
    resource = f"configmaps/{namespace}/{name}"
    try:
        return get_object(
            api, path, kind="ConfigMap", name=name, namespace=namespace, resource=resource
        )
    except NotFound:
        return None
