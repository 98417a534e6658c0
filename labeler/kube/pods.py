"""Read pods (as plain JSON): the placement view and the advisor need their nodes and requests."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from kubernetes import client

from labeler.kube.errors import call


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
    pods: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": page_size, "_preload_content": False}
        if label_selector:
            kwargs["label_selector"] = label_selector
        if field_selector:
            kwargs["field_selector"] = field_selector
        if token:
            kwargs["_continue"] = token
        if namespace:
            fn = partial(core.list_namespaced_pod, namespace, **kwargs)
            resource = f"pods (namespace {namespace})"
        else:
            fn = partial(core.list_pod_for_all_namespaces, **kwargs)
            resource = "pods (all namespaces)"
        resp: Any = call(fn, verb="list", resource=resource)
        try:
            doc = json.loads(resp.data)
        finally:
            resp.release_conn()
        pods.extend(doc.get("items") or [])
        token = (doc.get("metadata") or {}).get("continue")
        if not token:
            return pods
