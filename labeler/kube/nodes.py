"""Read nodes and write their labels with ownership (labeler.plan).

Nodes are read as plain JSON (``_preload_content=False``): at 10,000 nodes the client's
model deserialisation costs more than the API calls, and we need only a few fields.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from labeler.kube.errors import Conflict as ApiConflict
from labeler.kube.errors import Expired, translate
from labeler.kube.raw import abandon, call_discard, call_json, list_pages
from labeler.node import NodeInfo, NodeLabels
from labeler.plan import Desired, LabelPlan, plan_labels

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"


def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def get_node(api: client.ApiClient, name: str) -> NodeInfo:
    doc = call_json(
        lambda: core(api).read_node(name, _preload_content=False),
        verb="get",
        resource=f"nodes/{name}",
    )
    return NodeInfo.from_dict(doc)


def list_nodes(
    api: client.ApiClient,
    *,
    label_selector: str | None = None,
    page_size: int = 500,
) -> tuple[list[NodeInfo], str]:
    """All nodes (paginated), and the list's resourceVersion to start a watch from."""
    nodes: list[NodeInfo] = []
    resource_version = ""
    for doc in list_pages(
        core(api).list_node, resource="nodes", page_size=page_size, label_selector=label_selector
    ):
        nodes.extend(NodeInfo.from_dict(item) for item in doc.get("items") or [])
        meta = doc.get("metadata") or {}
        resource_version = resource_version or str(meta.get("resourceVersion") or "")
    return nodes, resource_version


def watch_nodes(
    api: client.ApiClient,
    *,
    resource_version: str,
    field_selector: str | None = None,
    label_selector: str | None = None,
    timeout_seconds: int = 300,
) -> Iterator[tuple[str, NodeInfo]]:
    """Yield (event type, node) from one watch request until the server ends it.

    Raises ``Expired`` when the resourceVersion is too old (410): the caller re-lists.
    BOOKMARK events are yielded too (with a node carrying only the resourceVersion) so the
    caller can remember the newest version.
    """
    kwargs: dict[str, Any] = {
        "watch": True,
        "resource_version": resource_version,
        "timeout_seconds": timeout_seconds,
        "allow_watch_bookmarks": True,
        "_preload_content": False,
        "_request_timeout": (10, timeout_seconds + 30),
    }
    if field_selector:
        kwargs["field_selector"] = field_selector
    if label_selector:
        kwargs["label_selector"] = label_selector
    try:
        resp: Any = core(api).list_node(**kwargs)
    except Exception as exc:
        raise translate(exc, "watch", "nodes") from exc
    finished = False
    try:
        for line in iter_resp_lines(resp):
            if not line.strip():
                continue
            event = json.loads(line)
            kind = event.get("type", "")
            obj = event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code") or 0)
                if code == 410:
                    raise Expired(
                        f"watch nodes: {obj.get('message', 'too old resource version')}",
                        status=410,
                        verb="watch",
                        resource="nodes",
                    )
                raise translate(_status_exception(obj), "watch", "nodes")
            yield kind, NodeInfo.from_dict(obj)
        finished = True
    except Exception as exc:
        raise translate(exc, "watch", "nodes") from exc
    finally:
        # Read to the end, the connection is clean and goes back to the pool. Given up
        # part-way (the caller closed the generator, an error event, a broken stream), the
        # server is still sending: the connection must be closed, never reused.
        if finished:
            resp.release_conn()
        else:
            abandon(resp)


def _status_exception(obj: Mapping[str, Any]) -> client.ApiException:
    exc = client.ApiException(status=int(obj.get("code") or 500), reason=obj.get("reason"))
    exc.body = json.dumps(obj)
    return exc


@dataclass(frozen=True)
class WriteResult:
    """What one node write did. ``plan`` is the plan that was sent (or would be)."""

    node: str
    plan: LabelPlan
    written: bool
    attempts: int = 1


class LabelWriter:
    """One minimal merge patch per node, guarded by resourceVersion; 409 → re-read, re-plan."""

    def __init__(self, api: client.ApiClient, *, conflict_retries: int = 5) -> None:
        self.api = api
        self.conflict_retries = conflict_retries

    def reconcile(
        self, name: str, desired: Desired, *, adopt: bool = False, dry_run: bool = False
    ) -> WriteResult:
        """GET the node, then write what differs."""
        return self.write(get_node(self.api, name), desired, adopt=adopt, dry_run=dry_run)

    def write(
        self,
        node: NodeLabels,
        desired: Desired,
        *,
        adopt: bool = False,
        dry_run: bool = False,
    ) -> WriteResult:
        """Write what differs on a node already read (e.g. from a LIST)."""
        for attempt in range(1, self.conflict_retries + 1):
            plan = plan_labels(node, desired, adopt=adopt)
            if plan.is_noop or dry_run:
                return WriteResult(node.name, plan, written=False, attempts=attempt)
            try:
                self._patch(node, plan)
                return WriteResult(node.name, plan, written=True, attempts=attempt)
            except ApiConflict:
                if attempt == self.conflict_retries:
                    raise
                log.info("node=%s changed under us (409); re-reading", node.name)
                node = get_node(self.api, node.name)
        raise AssertionError("unreachable")

    def _patch(self, node: NodeLabels, plan: LabelPlan) -> None:
        body = plan.patch(node.resource_version or None)
        call_discard(
            lambda: core(self.api).patch_node(
                node.name, body, _content_type=MERGE_PATCH, _preload_content=False
            ),
            verb="patch",
            resource=f"nodes/{node.name}",
        )
        log.info(
            "labels written node=%s set=%s removed=%s",
            node.name,
            ",".join(f"{k}={v}" for k, v in sorted(plan.added.items())) or "-",
            ",".join(plan.removed) or "-",
        )
