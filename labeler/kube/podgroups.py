"""Read kube-scheduler's PodGroups and CompositePodGroups (``scheduling.k8s.io``) as JSON.

PodGroups are served as ``v1beta1`` and CompositePodGroups as ``v1alpha3`` from Kubernetes
1.37 (both built-in, behind feature gates); a server without one of them answers 404 and
that kind is simply absent.
"""

from __future__ import annotations

from typing import Any

from labeler.base.logs import logger
from labeler.kube.client import Api
from labeler.kube.errors import NotFound
from labeler.kube.raw import list_items

log = logger(__name__)

GROUP = "scheduling.k8s.io"
SERVED = (
    ("v1beta1", "podgroups", "PodGroup"),
    ("v1alpha3", "compositepodgroups", "CompositePodGroup"),
)


def list_pod_groups(api: Api) -> list[dict[str, Any]]:
    """Every PodGroup and CompositePodGroup, all namespaces; kind and apiVersion set on
    each (a typed list leaves them out of its items)."""
    out: list[dict[str, Any]] = []
    for version, plural, kind in SERVED:
        path = f"/apis/{GROUP}/{version}/{plural}"
        try:
            items = list_items(api, path, dict, resource=f"{plural}.{GROUP}", kind=kind)[0]
        except NotFound:
            log.info("%s/%s %s are not served: none read", GROUP, version, plural)
            continue
        out += [{**it, "kind": kind, "apiVersion": f"{GROUP}/{version}"} for it in items]
    return out
