"""Whole-answer calls with retries, paginated LISTs, and streamed answers (watches).

Requests whose answer is read whole go through ``Api.send`` (labeler.kube.wire), which
never leaves a connection half-read. A stream (``Api.stream``) is a urllib3 response we
own: read to the end, its connection goes back to the pool; given up part-way (a watch
closed early, a bad event), data is still coming, so ``abandon`` closes the connection
instead of returning it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from labeler.kube.errors import ApiStatus, Expired, KubeError, call, translate

if TYPE_CHECKING:
    from labeler.kube.client import Api


def abandon(resp: Any) -> None:
    """Close a streamed response whose body was not read to the end, and its connection."""
    try:
        resp.close()
    finally:
        resp.release_conn()  # the pool replaces the closed connection on its next use


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


def iter_lines(resp: Any) -> Iterator[bytes]:
    """The lines of a streamed body (a watch: one JSON event per line), as they arrive."""
    pending = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        yield from lines
    if pending:
        yield pending


# 1,000,000 objects at the default page size: far above any real LIST (a 15,000-node
# cluster's pods are ~300 pages), low enough that a server handing out new continue tokens
# forever is stopped within seconds.
MAX_PAGES = 2000


def list_pages(
    api: Api,
    path: str,
    *,
    resource: str,
    page_size: int = 500,
    query: Mapping[str, str | None] | None = None,
    accept: str = "application/json",
    max_pages: int = MAX_PAGES,
) -> Iterator[dict[str, Any]]:
    """Each page of a paginated LIST as parsed JSON (a JSON object; anything else is a
    KubeError), following ``metadata.continue``.

    ``query`` parameters with a false value (no selector given) are left out; ``accept``
    is the Accept header of every page. A ``continue`` token given twice (the list would
    go round for ever) or more than ``max_pages`` pages stop the list with a KubeError.
    """
    params: dict[str, Any] = {k: v for k, v in (query or {}).items() if v}
    params["limit"] = page_size
    seen: dict[str, int] = {}  # continue token -> the page that gave it
    for page in range(1, max_pages + 1):
        doc = call_json(
            lambda: api.send("GET", path, query=params, accept=accept),
            verb="list",
            resource=resource,
        )
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or not isinstance(meta or {}, dict):
            raise KubeError(
                f"list {resource}: page {page} is not a list object (a JSON "
                f"{type(doc).__name__}); whatever answered is not the API server",
                verb="list",
                resource=resource,
            )
        yield doc
        token = (meta or {}).get("continue")
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


def watch_events(
    api: Api,
    path: str,
    *,
    resource: str,
    resource_version: str,
    query: Mapping[str, str | None] | None = None,
    timeout_seconds: int = 300,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield (event type, object) from one WATCH of ``path`` until the server ends it.

    Raises ``Expired`` when the resourceVersion is too old (410): the caller re-lists.
    BOOKMARK events are yielded too (an object carrying only the resourceVersion), so the
    caller can remember the newest version. ``query`` entries with no value are left out.
    """
    params: dict[str, Any] = {k: v for k, v in (query or {}).items() if v}
    params.update(
        watch="true",
        resourceVersion=resource_version,
        timeoutSeconds=timeout_seconds,
        allowWatchBookmarks="true",
    )
    try:
        resp: Any = api.stream(path, query=params, timeout=(10, timeout_seconds + 30))
    except Exception as exc:
        raise translate(exc, "watch", resource) from exc
    finished = False
    try:
        for line in iter_lines(resp):
            if not line.strip():
                continue
            event = json.loads(line)
            kind = event.get("type", "")
            obj = event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code") or 0)
                if code == 410:
                    raise Expired(
                        f"watch {resource}: {obj.get('message', 'too old resource version')}",
                        status=410,
                        verb="watch",
                        resource=resource,
                    )
                raise translate(_status_exception(obj), "watch", resource)
            yield kind, obj
        finished = True
    except Exception as exc:
        raise translate(exc, "watch", resource) from exc
    finally:
        # Read to the end, the connection is clean and goes back to the pool. Given up
        # part-way (the caller closed the generator, an error event, a broken stream), the
        # server is still sending: the connection must be closed, never reused.
        if finished:
            resp.release_conn()
        else:
            abandon(resp)


def _status_exception(obj: Mapping[str, Any]) -> ApiStatus:
    body = json.dumps(obj).encode()
    return ApiStatus(int(obj.get("code") or 500), str(obj.get("reason") or ""), body)
