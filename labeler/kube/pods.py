"""Read pods (as plain JSON): the placement view and the advisor need their nodes and requests."""

from __future__ import annotations

from functools import partial
from typing import Any

from kubernetes import client

from labeler.kube.raw import list_pages


def list_pods(
    api: client.ApiClient,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    page_size: int = 500,
) -> list[dict[str, Any]]:
    """Every matching pod, all namespaces unless ``namespace`` is given (paginated)."""
    core = client.CoreV1Api(api)
    if namespace:
        list_fn: Any = partial(core.list_namespaced_pod, namespace)
        resource = f"pods (namespace {namespace})"
    else:
        list_fn = core.list_pod_for_all_namespaces
        resource = "pods (all namespaces)"
    pods: list[dict[str, Any]] = []
    for doc in list_pages(
        list_fn,
        resource=resource,
        page_size=page_size,
        label_selector=label_selector,
        field_selector=field_selector,
    ):
        pods.extend(doc.get("items") or [])
    return pods
