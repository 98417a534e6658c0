"""One WATCH request as a stream of (event type, object), for any resource.

Raises ``Expired`` on 410 (the resourceVersion is too old: the caller lists again) and
translates every other failure with the verb and resource. A connection read to the end
goes back to the pool; one given up part-way is closed (see :mod:`labeler.kube.raw`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from labeler.kube.client import Api
from labeler.kube.errors import ApiStatus, Expired, translate
from labeler.kube.raw import abandon, iter_lines


def watch_objects(
    api: Api,
    path: str,
    resource: str,
    *,
    resource_version: str,
    field_selector: str | None = None,
    label_selector: str | None = None,
    timeout_seconds: int = 300,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield (event type, object) until the server ends the watch; BOOKMARKs included
    (their object carries only the resourceVersion)."""
    query: dict[str, Any] = {
        "watch": "true",
        "resourceVersion": resource_version,
        "timeoutSeconds": timeout_seconds,
        "allowWatchBookmarks": "true",
    }
    if field_selector:
        query["fieldSelector"] = field_selector
    if label_selector:
        query["labelSelector"] = label_selector
    try:
        resp: Any = api.request("GET", path, query=query, timeout=(10, timeout_seconds + 30))
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
