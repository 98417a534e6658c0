"""Whole-answer calls with retries, paginated LISTs, and streamed answers (watches).

Requests whose answer is read whole go through ``Api.send`` (labeler.kube.wire), which
never leaves a connection half-read. A stream is a urllib3 response we own: read to the
end, its connection goes back to the pool; given up part-way (a watch closed early, a bad
event), data is still coming, so ``abandon`` closes the connection instead of returning it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from labeler.kube.errors import call

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


def list_pages(
    api: Api,
    path: str,
    *,
    resource: str,
    page_size: int = 500,
    query: Mapping[str, str | None] | None = None,
    accept: str = "application/json",
) -> Iterator[dict[str, Any]]:
    """Each page of a paginated LIST as parsed JSON, following ``metadata.continue``.

    ``query`` parameters with a false value (no selector given) are left out; ``accept``
    is the Accept header of every page.
    """
    params: dict[str, Any] = {k: v for k, v in (query or {}).items() if v}
    params["limit"] = page_size
    while True:
        doc: dict[str, Any] = call_json(
            lambda: api.send("GET", path, query=params, accept=accept),
            verb="list",
            resource=resource,
        )
        yield doc
        token = (doc.get("metadata") or {}).get("continue")
        if not token:
            return
        params["continue"] = token
