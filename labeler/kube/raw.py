"""Raw responses (urllib3, body unread) and the pooled connections behind them.

We skip the client's model deserialisation (at 10,000 nodes it costs more than the API
calls), so we own the urllib3 response and must leave its keep-alive connection clean:

- a body read to the end: the connection goes back to the pool (``read_json``, ``discard``);
- a body left unread on a pooled connection would be taken as the next response's status
  line (urllib3 2.x usually notices the readable socket and reconnects, which still costs a
  new connection), so ``discard`` reads it first;
- a stream given up part-way (a watch closed early, a bad event) still has data coming:
  ``abandon`` closes the connection instead of returning it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from labeler.kube.errors import call

if TYPE_CHECKING:
    from labeler.kube.client import Api


def read_json(resp: Any) -> Any:
    """The whole body as JSON; the connection goes back to the pool."""
    try:
        return json.loads(resp.data)
    finally:
        resp.release_conn()


def discard(resp: Any) -> None:
    """Read and drop the body (a write's echo of the object), then release the connection."""
    try:
        resp.drain_conn()
    finally:
        resp.release_conn()


def abandon(resp: Any) -> None:
    """Close a response whose body was not read to the end, and its connection."""
    try:
        resp.close()
    finally:
        resp.release_conn()  # the pool replaces the closed connection on its next use


def call_json(fn: Callable[[], Any], *, verb: str, resource: str, **retry: Any) -> Any:
    """Send a request and read its whole answer inside the retries, so a connection that
    breaks in the middle of a body is retried like one that broke before the answer."""
    return call(lambda: read_json(fn()), verb=verb, resource=resource, **retry)


def call_discard(fn: Callable[[], Any], *, verb: str, resource: str, **retry: Any) -> None:
    """Like ``call_json`` for a write whose answer (the object echoed back) we do not need.
    A write retried after its answer was lost is safe here: node patches carry the
    resourceVersion (a repeat gets 409 and is re-planned), the rest are full replacements."""
    call(lambda: discard(fn()), verb=verb, resource=resource, **retry)


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
) -> Iterator[dict[str, Any]]:
    """Each page of a paginated LIST as parsed JSON, following ``metadata.continue``.

    ``query`` parameters with a false value (no selector given) are left out.
    """
    params: dict[str, Any] = {k: v for k, v in (query or {}).items() if v}
    params["limit"] = page_size
    while True:
        doc: dict[str, Any] = call_json(
            partial(api.request, "GET", path, query=dict(params)), verb="list", resource=resource
        )
        yield doc
        token = (doc.get("metadata") or {}).get("continue")
        if not token:
            return
        params["continue"] = token
