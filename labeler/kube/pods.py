"""Read pods (as plain JSON): the placement view and the advisor need their nodes and requests."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from labeler.kube.client import Api
from labeler.kube.raw import list_items


def list_pods(
    api: Api,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    page_size: int = 500,
) -> list[dict[str, Any]]:
    """Every matching pod, all namespaces unless ``namespace`` is given (paginated)."""
    if namespace:
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods"
        resource = f"pods (namespace {namespace})"
    else:
        path = "/api/v1/pods"
        resource = "pods (all namespaces)"
    query = {"labelSelector": label_selector, "fieldSelector": field_selector}
    return list_items(
        api, path, dict, resource=resource, kind="Pod", page_size=page_size, query=query
    )[0]
