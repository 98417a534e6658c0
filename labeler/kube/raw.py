"""Whole-answer calls with retries, paginated LISTs, one object's GET, and streamed answers
(watches), for every reader of the API.

Requests whose answer is read whole go through ``Api.send``, which never leaves a
connection half-read. A stream (``Api.stream``) is a urllib3 response we own, with the
deadline of its whole answer: read to the end, its connection goes back to the pool; given
up part-way (a watch closed early, a bad event), data is still coming, so the connection
is closed instead.

The transport bounds an answer (its deadline, its size); here is checked what it says. A
LIST page is a list of the kind asked for, its items named objects of that kind; a GET's
answer is the object asked for (name, namespace, kind); a watch event has one of the API's
event types and an object of the kind watched, and is at most
:data:`~labeler.kube.answer.MAX_OBJECT` bytes. Anything else is a KubeError that names the
resource: what answered is not the API server (a proxy, a cache, a load balancer out of
step), and nothing is built on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from labeler.base.httpclient import AnswerTooLarge, Deadline
from labeler.kube.answer import MAX_OBJECT, RECV
from labeler.kube.errors import ApiStatus, Expired, KubeError, call, translate

if TYPE_CHECKING:
    from labeler.kube.client import Api

T = TypeVar("T")
JSON = "application/json"
# The kind of an object whose metadata alone was asked for (``as=PartialObjectMetadata`` in
# the Accept header; a LIST page of them is a PartialObjectMetadataList).
PARTIAL = "PartialObjectMetadata"
EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR")


def call_json(fn: Callable[[], bytes], *, verb: str, resource: str, **retry: Any) -> Any:
    """Send a request (``fn``: ``Api.send``, the whole answer) and parse it, inside the
    retries: a connection that breaks in the middle of a body is retried like one that broke
    before the answer."""
    return call(lambda: json.loads(fn()), verb=verb, resource=resource, **retry)


def call_discard(fn: Callable[[], bytes], *, verb: str, resource: str, **retry: Any) -> None:
    """Like ``call_json`` for a write whose answer (the object echoed back) we do not need.
    A write retried after its answer was lost is safe here: node patches carry the
    resourceVersion (a repeat gets 409 and is re-planned), the rest are full replacements."""
    call(fn, verb=verb, resource=resource, **retry)


def not_the_api(verb: str, resource: str, what: str) -> KubeError:
    """The error for an answer whose content no API server gives."""
    return KubeError(
        f"{verb} {resource}: {what}; whatever answered is not the API server (a proxy or "
        "cache in between?): nothing was built on it",
        verb=verb,
        resource=resource,
    )


def _kinds(kind: str, accept: str) -> tuple[str, ...]:
    """The kinds an object of ``kind`` may come as: itself, or its metadata alone when the
    Accept header asked for that (the server may also answer with the whole object)."""
    return (kind, PARTIAL) if f"as={PARTIAL}" in accept else (kind,)


def check_named(obj: Any, kinds: tuple[str, ...], verb: str, resource: str, where: str) -> None:
    """KubeError unless ``obj`` is a named object whose ``kind``, if it says one, is one of
    ``kinds`` (typed LISTs leave the kind out of their items; no ``kinds``: any kind)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if type(name) is not str or not name:
        raise not_the_api(verb, resource, f"{where} is not a named object")
    found = obj.get("kind")
    if kinds and found is not None and found not in kinds:
        raise not_the_api(verb, resource, f"{where} is a {str(found)[:80]!r}, not a {kinds[0]}")


def _check_page(doc: Any, page: int, kinds: tuple[str, ...], resource: str) -> dict[str, Any]:
    """The metadata of a LIST page that is a list of ``kinds`` (no ``kinds``: of named
    objects), else KubeError."""
    where = f"page {page}"
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(meta or {}, dict):
        raise not_the_api(
            "list", resource, f"{where} is not a list object (a JSON {type(doc).__name__})"
        )
    found = doc.get("kind")
    if kinds and found is not None and found not in [f"{k}List" for k in kinds]:
        raise not_the_api(
            "list", resource, f"{where} is a {str(found)[:80]!r}, not a {kinds[0]}List"
        )
    items = doc.get("items")
    if not isinstance(items if items is not None else [], list):
        raise not_the_api("list", resource, f"{where}: its items are not a list")
    for i, item in enumerate(items or ()):
        check_named(item, kinds, "list", resource, f"{where}, item {i + 1}")
    return meta or {}


# 1,000,000 objects at the default page size: far above any real LIST (a 15,000-node
# cluster's pods are ~300 pages), low enough that a server handing out new continue tokens
# forever is stopped within seconds.
MAX_PAGES = 2000


def list_pages(
    api: Api,
    path: str,
    *,
    resource: str,
    kind: str = "",
    page_size: int = 500,
    query: Mapping[str, str | None] | None = None,
    accept: str = JSON,
    max_pages: int = MAX_PAGES,
) -> Iterator[dict[str, Any]]:
    """Each page of a paginated LIST as parsed JSON, following ``metadata.continue``: a list
    object whose items are named objects (of ``kind``, when given), else a KubeError.

    ``query`` parameters with a false value (no selector given) are left out; ``accept``
    is the Accept header of every page. A ``continue`` token given twice (the list would
    go round for ever) or more than ``max_pages`` pages stop the list with a KubeError.
    """
    params: dict[str, Any] = {k: v for k, v in (query or {}).items() if v}
    params["limit"] = page_size
    kinds = _kinds(kind, accept) if kind else ()
    seen: dict[str, int] = {}  # continue token -> the page that gave it
    for page in range(1, max_pages + 1):
        doc = call_json(
            lambda: api.send("GET", path, query=params, accept=accept),
            verb="list",
            resource=resource,
        )
        meta = _check_page(doc, page, kinds, resource)
        yield doc
        token = meta.get("continue")
        if not token:
            return
        token = str(token)
        if token in seen:
            raise KubeError(
                f"list {resource}: page {page} gave the continue token of page {seen[token]} "
                "again, so the list would never end; stopped. Something between us and the "
                "API server (a cache or proxy that ignores the query) answers for it",
                verb="list",
                resource=resource,
            )
        seen[token] = page
        params["continue"] = token
    raise KubeError(
        f"list {resource}: more than {max_pages} pages of {page_size}; stopped (no cluster "
        "has that many; a server that hands out new continue tokens for ever does)",
        verb="list",
        resource=resource,
    )


def list_items(
    api: Api,
    path: str,
    read: Callable[[dict[str, Any]], T],
    *,
    resource: str,
    kind: str,
    page_size: int = 500,
    query: Mapping[str, str | None] | None = None,
    accept: str = JSON,
) -> tuple[list[T], str]:
    """Every object of a paginated LIST of ``kind`` (checked as :func:`list_pages` does),
    each through ``read`` page by page, and the list's resourceVersion (to watch from)."""
    out: list[T] = []
    version = ""
    pages = list_pages(
        api, path, resource=resource, kind=kind, page_size=page_size, query=query, accept=accept
    )
    for doc in pages:
        out.extend(map(read, doc.get("items") or ()))
        version = version or str((doc.get("metadata") or {}).get("resourceVersion") or "")
    return out, version


def get_object(
    api: Api, path: str, *, kind: str, name: str, namespace: str = "", resource: str
) -> dict[str, Any]:
    """GET one object, which the answer must be: its name (the transport checks it; an
    answer for another object drops its connection and is retried), its namespace (for a
    namespaced one) and its kind, else a KubeError. The kind is set on what is returned."""
    doc = call_json(lambda: api.send("GET", path, name=name), verb="get", resource=resource)
    check_named(doc, (kind,), "get", resource, "the answer")
    found = doc["metadata"].get("namespace")
    if namespace and found != namespace:
        raise not_the_api("get", resource, f"the answer is in namespace {found!r}")
    return {**doc, "kind": kind}


def iter_lines(resp: Any, deadline: Deadline, limit: int = MAX_OBJECT) -> Iterator[bytes]:
    """The lines of a streamed body (a watch: one JSON event per line), as they arrive; a
    line over ``limit`` bytes is AnswerTooLarge, and no read starts past ``deadline``. Read
    with ``read1``: what has come, without waiting for a full buffer. Each byte is looked at
    once, however the stream is cut up."""
    pending = bytearray()
    while True:
        deadline.check()
        data = resp.read1(RECV)
        if not data:
            break
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            pending += data[start:end]
            yield bytes(pending)
            pending.clear()
            start = end + 1
        pending += data[start:]
        if len(pending) > limit:
            raise AnswerTooLarge(f"a line of a stream longer than {limit} bytes")
    if pending:
        yield bytes(pending)


# A watch's whole answer may take its timeoutSeconds and this much more: the server ends it
# on time, so a stream still open after that (a trickle that never ends) is not the server's.
WATCH_MARGIN = 30


def watch_events(
    api: Api,
    path: str,
    *,
    resource: str,
    kind: str,
    resource_version: str,
    query: Mapping[str, str | None] | None = None,
    timeout_seconds: int = 300,
    opened: Callable[[], None] | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield (event type, object) from one WATCH of ``path`` until the server ends it.

    Raises ``Expired`` when the resourceVersion is too old (410): the caller re-lists.
    BOOKMARK events are yielded too (an object carrying only the resourceVersion), so the
    caller can remember the newest version. ``query`` entries with no value are left out.
    An event that is not the API's (see :func:`_event`) ends the watch with a KubeError.
    The whole answer must end within ``timeout_seconds`` + :data:`WATCH_MARGIN` seconds.
    ``opened`` is called once the server has accepted the watch (its answer has begun),
    which may be long before the first event: a caller's sign that the watch is up.
    """
    params: dict[str, Any] = {k: v for k, v in (query or {}).items() if v}
    params.update(
        watch="true",
        resourceVersion=resource_version,
        timeoutSeconds=timeout_seconds,
        allowWatchBookmarks="true",
    )
    try:
        resp, deadline = api.stream(
            path, query=params, timeout=(10, timeout_seconds + WATCH_MARGIN)
        )
    except Exception as exc:
        raise translate(exc, "watch", resource) from exc
    finished = False
    try:
        if opened is not None:
            opened()
        for line in iter_lines(resp, deadline):
            if line.strip():
                yield _event(line, resource, kind)
        finished = True
    except Exception as exc:
        err = deadline.timed_out() if deadline.expired else exc
        raise translate(err, "watch", resource) from exc
    finally:
        deadline.close()
        # Read to the end, the connection is clean and goes back to the pool. Given up
        # part-way (the caller closed the generator, an error event, a broken stream), the
        # server is still sending: the connection must be closed, never reused.
        if not finished:
            resp.close()  # the pool replaces the closed connection on its next use
        resp.release_conn()


def _event(line: bytes, resource: str, kind: str) -> tuple[str, dict[str, Any]]:
    """(type, object) of one watch event: a JSON object with a type the API sends and an
    object of ``kind`` (a BOOKMARK's carries only a resourceVersion); an ERROR event raises
    its error (Expired for 410)."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        event = None
    what = event.get("type") if isinstance(event, dict) else None
    obj = event.get("object") if isinstance(event, dict) else None
    if what not in EVENT_TYPES or not isinstance(obj, dict):
        raise not_the_api("watch", resource, f"a line that is not a watch event: {line[:80]!r}")
    if what == "ERROR":
        code = obj["code"] if type(obj.get("code")) is int else 0
        if code == 410:
            raise Expired(
                f"watch {resource}: {str(obj.get('message', 'too old resource version'))[:300]}",
                status=410,
                verb="watch",
                resource=resource,
            )
        raise translate(_status_exception(obj, code), "watch", resource)
    if what == "BOOKMARK":
        if obj.get("kind") not in (None, kind):
            raise not_the_api("watch", resource, f"a BOOKMARK of a {str(obj.get('kind'))[:80]!r}")
    else:
        check_named(obj, (kind,), "watch", resource, f"the object of a {what} event")
    return what, obj


def _status_exception(obj: Mapping[str, Any], code: int) -> ApiStatus:
    body = json.dumps(obj).encode()
    return ApiStatus(code or 500, str(obj.get("reason") or ""), body)
