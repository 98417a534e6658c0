"""Read nodes and write their labels with ownership (labeler.core.plan).

Nodes are read as plain JSON into :class:`NodeInfo`: at 10,000 nodes the client's model
deserialisation would cost more than the API calls, and we need only a few fields.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from labeler.base.clock import SYSTEM_CLOCK, Clock
from labeler.base.logs import logger
from labeler.core.labels import NODE_NAME_RE
from labeler.core.node import (
    OWNED_ANNOTATION,
    OWNED_ANNOTATIONS_ANNOTATION,
    OWNERS_ANNOTATION,
    SLINKY_ANNOTATION,
    SOURCE_IDS_ANNOTATION,
    NodeInfo,
    NodeLabels,
)
from labeler.core.plan import Desired, LabelPlan, plan_labels
from labeler.kube import steps
from labeler.kube.client import JSON, Api
from labeler.kube.errors import Conflict as ApiConflict
from labeler.kube.errors import Interrupted, KubeError, retrying, translate
from labeler.kube.raw import PARTIAL, list_items, watch_events
from labeler.kube.steps import Call, Steps

log = logger(__name__)

MERGE_PATCH = "application/merge-patch+json"
# The annotations a label plan reads; a lean read keeps no others.
OWN_ANNOTATIONS = (
    OWNED_ANNOTATION,
    OWNERS_ANNOTATION,
    SOURCE_IDS_ANNOTATION,
    OWNED_ANNOTATIONS_ANNOTATION,
    SLINKY_ANNOTATION,  # owned like a label: the plan must see a value someone else wrote
)
T = TypeVar("T")


NODES = "/api/v1/nodes"
# A LIST of metadata only (kind PartialObjectMetadataList, meta.k8s.io/v1): each item holds
# its ``metadata`` and nothing of spec or status, pagination and the list's resourceVersion
# as in a full list. A server that cannot convert skips that choice and takes the plain JSON
# named after it (servers before 1.15, some aggregated ones), so the reader takes either.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
# A write's answer echoes the whole node, which the writer does not read: asked for in
# this form, the server sends back the metadata only (a server without it, plain JSON).
METADATA_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


def node_path(name: str) -> str:
    # A valid node name needs no quoting; checked first, as quoting costs more than the
    # rest of building a request.
    return f"{NODES}/{name if NODE_NAME_RE.fullmatch(name) else quote(name, safe='')}"


def get_node(api: Api, name: str, *, clock: Clock = SYSTEM_CLOCK) -> NodeInfo:
    """GET one node (:func:`read_node`); ``clock`` sleeps the pauses between retries."""
    return steps.run(read_node(name), api.perform, clock.sleep)


def read_node(name: str) -> Steps[NodeInfo]:
    """GET one node, with retries (labeler.kube.steps). The answer must be that node (the
    transport checks its name: an answer for another node is dropped with its connection
    and the GET retried) and a Node as the API serves it, else a KubeError."""
    path = node_path(name)
    resource = f"nodes/{name}"

    def attempt() -> Steps[Any]:
        # Parsed inside the attempt: a body cut off mid-way is retried like a lost answer.
        return json.loads((yield Call("GET", path, name=name)))

    doc = yield from retrying(attempt, verb="get", resource=resource)
    return node_info(doc, "get", resource)


def _strings(value: Any) -> bool:
    """Is ``value`` absent or a map of strings to strings (labels, annotations)?"""
    return value is None or (
        type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items())
    )


def check_node(doc: Any, verb: str, resource: str = "nodes") -> None:
    """KubeError unless ``doc`` has the shape of a Node's metadata that the readers and
    writers use: a planned write (or a count) built on anything else would be a guess."""
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    if not isinstance(meta, dict):
        problem = "it has no metadata"
    elif doc.get("kind") not in (None, "Node", PARTIAL):
        problem = f"its kind is {str(doc['kind'])[:80]!r}"
    elif type(meta.get("name")) is not str or not meta["name"]:
        problem = "metadata.name is not a name"
    elif not _strings(meta.get("labels")):
        problem = "metadata.labels is not a map of strings"
    elif not _strings(meta.get("annotations")):
        problem = "metadata.annotations is not a map of strings"
    else:
        return
    raise _not_a_node(verb, resource, problem)


def _not_a_node(verb: str, resource: str, problem: str) -> KubeError:
    return KubeError(
        f"{verb} {resource}: the answer is not a Node as the API server serves one "
        f"({problem}); nothing is built on it",
        verb=verb,
        resource=resource,
    )


def list_nodes(
    api: Api,
    *,
    label_selector: str | None = None,
    page_size: int = 500,
) -> tuple[list[NodeInfo], str]:
    """All nodes (paginated), and the list's resourceVersion to start a watch from."""
    return _list(api, node_info, label_selector, page_size)


def list_node_labels(
    api: Api,
    *,
    label_selector: str | None = None,
    page_size: int = 500,
) -> list[NodeLabels]:
    """Every node as a label writer sees it: name, labels, resourceVersion and only the
    annotations this project writes. The server is asked for metadata only: a real Node is
    10-50 KB of status (images, conditions) that would be sent and parsed for nothing. Each
    page's objects are dropped once read, so memory holds the labels, not the nodes."""
    try:
        return _list(api, labels_of, label_selector, page_size, METADATA_LIST)[0]
    except KubeError as err:
        if err.status != 406:
            raise
        # Something between us and the API server refused the metadata form outright
        # instead of answering plain JSON: list the full objects.
        log.info("metadata-only LIST refused (406); listing full nodes")
        return _list(api, labels_of, label_selector, page_size)[0]


def node_info(obj: Mapping[str, Any], verb: str = "list", resource: str = "nodes") -> NodeInfo:
    """A node read from the API (``verb``: how), checked first (:func:`check_node`). Its
    spec and status are read as the API server's schema has them; where they are not (a
    proxy's mangling), the answer is refused like a malformed metadata, not a crash of the
    reader's thread."""
    check_node(obj, verb, resource)
    try:
        return NodeInfo.from_dict(obj)
    except (AttributeError, TypeError, ValueError) as e:
        problem = f"its spec or status cannot be read: {str(e)[:120]}"
        raise _not_a_node(verb, resource, problem) from e


def labels_of(obj: Mapping[str, Any]) -> NodeLabels:
    check_node(obj, "list")
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    return NodeLabels(
        name=meta.get("name", ""),
        labels=meta.get("labels") or {},
        annotations={k: annotations[k] for k in OWN_ANNOTATIONS if k in annotations},
        resource_version=str(meta.get("resourceVersion") or ""),
    )


def _list(
    api: Api,
    read: Callable[[Mapping[str, Any]], T],
    label_selector: str | None,
    page_size: int,
    accept: str = JSON,
) -> tuple[list[T], str]:
    return list_items(
        api,
        NODES,
        read,
        resource="nodes",
        kind="Node",
        page_size=page_size,
        query={"labelSelector": label_selector},
        accept=accept,
    )


def watch_nodes(
    api: Api,
    *,
    resource_version: str,
    field_selector: str | None = None,
    label_selector: str | None = None,
    timeout_seconds: int = 300,
    opened: Callable[[], None] | None = None,
) -> Iterator[tuple[str, NodeInfo]]:
    """Yield (event type, node) from one watch request until the server ends it.

    Raises ``Expired`` when the resourceVersion is too old (410): the caller re-lists.
    BOOKMARK events are yielded too (with a node carrying only the resourceVersion) so the
    caller can remember the newest version. ``opened``: see
    :func:`labeler.kube.raw.watch_events`.
    """
    events = watch_events(
        api,
        NODES,
        resource="nodes",
        kind="Node",
        resource_version=resource_version,
        query={"fieldSelector": field_selector, "labelSelector": label_selector},
        timeout_seconds=timeout_seconds,
        opened=opened,
    )
    for kind, obj in events:
        yield kind, NodeInfo.from_dict(obj) if kind == "BOOKMARK" else node_info(obj, "watch")


@dataclass(frozen=True)
class WriteResult:
    """What one node write did. ``plan`` is the plan that was sent (or would be)."""

    node: str
    plan: LabelPlan
    written: bool
    attempts: int = 1


class LabelWriter:
    """One minimal merge patch per node, guarded by resourceVersion; 409 → re-read, re-plan."""

    def __init__(self, api: Api, *, conflict_retries: int = 5, clock: Clock = SYSTEM_CLOCK) -> None:
        self.api = api
        self.conflict_retries = conflict_retries
        self.clock = clock  # sleeps the pauses between retries (a test's returns at once)

    def reconcile(
        self, name: str, desired: Desired, *, adopt: bool = False, dry_run: bool = False
    ) -> WriteResult:
        """GET the node, then write what differs."""
        node = steps.run(read_node(name), self.api.perform, self.clock.sleep)
        return self.write(node, desired, adopt=adopt, dry_run=dry_run)

    def write(
        self, node: NodeLabels, desired: Desired, *, adopt: bool = False, dry_run: bool = False
    ) -> WriteResult:
        """Write what differs on a node already read (the agent's own node)."""
        work = self.steps(node, desired, adopt=adopt, dry_run=dry_run)
        return steps.run(work, self.api.perform, self.clock.sleep)

    def steps(
        self,
        node: NodeLabels,
        desired: Desired,
        *,
        adopt: bool = False,
        dry_run: bool = False,
        plan: LabelPlan | None = None,
    ) -> Steps[WriteResult]:
        """:meth:`write` as steps (labeler.kube.steps), for a caller that runs many.
        ``plan``: the plan of ``desired`` on this very ``node`` if the caller made it
        already (the first attempt sends it; a 409 re-plans from the node read again)."""
        for attempt in range(1, self.conflict_retries + 1):
            if plan is None or attempt > 1:
                plan = plan_labels(node, desired, adopt=adopt)
            if plan.is_noop or dry_run:
                return WriteResult(node.name, plan, written=False, attempts=attempt)
            try:
                yield from self._patch(node, plan)
                return WriteResult(node.name, plan, written=True, attempts=attempt)
            except ApiConflict:
                if attempt == self.conflict_retries:
                    raise
                log.info("node=%s changed under us (409); re-reading", node.name)
                node = yield from read_node(node.name)
        raise AssertionError("unreachable")

    def _patch(self, node: NodeLabels, plan: LabelPlan) -> Steps[None]:
        body = json.dumps(plan.patch(node.resource_version or None)).encode()
        # The echo (metadata only) is read for its name: an answer for another node, on a
        # connection out of step, must not count as this write (see labeler.kube.answer).
        patch = Call(
            "PATCH", node_path(node.name), body, MERGE_PATCH, accept=METADATA_ONE, name=node.name
        )
        resource = f"nodes/{node.name}"
        # Set once an attempt ends without a usable answer and the node could not be read
        # to settle it (the API server away): a 409 on a later attempt may then be this very
        # write, which moved the resourceVersion, and is settled by reading the node.
        unsettled = False

        def attempt() -> Steps[None]:
            nonlocal unsettled
            try:
                yield patch
            except Exception as exc:
                err = translate(exc, "patch", resource)
                # No usable answer (none, cut off, garbled, too large, for another node):
                # the server may have applied the patch. Its retry would get 409 (the
                # resourceVersion moved) and "failed" or "unchanged" would be untrue, so
                # look at the node first (not once the run is stopping). So too after a
                # status no API server answers with (1xx, 3xx, over 599: a proxy's).
                foreign = err.status < 200 or 300 <= err.status < 400 or err.status > 599
                unknown = foreign and not isinstance(err, Interrupted)
                unknown = unknown or (unsettled and isinstance(err, ApiConflict))
                if unknown and (yield from _applied(node.name, plan)):
                    log.warning(
                        "node=%s: the reply to the patch was lost or unusable, but the node "
                        "has the planned labels: written",
                        node.name,
                    )
                    return
                unsettled = unsettled or unknown
                raise err from exc

        yield from retrying(attempt, verb="patch", resource=resource)
        if log.isEnabledFor(logging.INFO):
            log.info(
                "labels written node=%s set=%s removed=%s",
                node.name,
                ",".join(f"{k}={v}" for k, v in sorted(plan.added.items())) or "-",
                ",".join(plan.removed) or "-",
            )


def _applied(name: str, plan: LabelPlan) -> Steps[bool]:
    """Whether the node now has every label and annotation value ``plan`` writes
    (None: absent); False when it cannot be read either."""
    try:
        now = yield from read_node(name)
    except KubeError as e:
        log.warning("node=%s: cannot re-read after a lost reply: %s", name, e)
        return False
    return all(now.labels.get(k) == v for k, v in plan.labels.items()) and all(
        now.annotations.get(k) == v for k, v in plan.annotations.items()
    )
