"""Watch streams ("API concepts: Efficient detection of changes").

- resourceVersion unset or "0": synthetic ADDED for every current match, then changes.
- resourceVersion=N: every change after N, or one ERROR event with a 410 Expired Status
  ("too old resource version: N (M)") when N is older than the kept history — the watch
  cache answers with HTTP 200 and that ERROR event (cacher.go newErrWatcher).
- Selectors filter with transitions exactly like cache_watcher.go convertToWatchEvent:
  starts matching -> ADDED, keeps matching -> MODIFIED, stops matching -> DELETED carrying
  the previous state at the new resourceVersion.
- sendInitialEvents=true: ADDED for all, then a BOOKMARK annotated
  `k8s.io/initial-events-end: "true"` (KEP-3157 "watch-list"). A watch that allows
  bookmarks gets that BOOKMARK after its synthetic ADDED events too (resourceVersion unset
  or "0"), as a 1.37 API server sends it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from . import errors
from .resources import Resource
from .selectors import FieldSelector, LabelSelector
from .store import Event, Obj, Store, events_after, matching, oldest_rv


class WatchFilter:
    def __init__(
        self, res: Resource, ns: str | None, lsel: LabelSelector, fsel: FieldSelector
    ) -> None:
        self.res, self.ns, self.lsel, self.fsel = res, ns, lsel, fsel

    def __call__(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        in_ns = self.ns is None or not self.res.namespaced
        if not in_ns and obj["metadata"].get("namespace") != self.ns:
            return False
        if not self.lsel.empty and not self.lsel.matches(obj["metadata"].get("labels")):
            return False
        return self.fsel.empty or self.fsel.matches(self.res.fields(obj))

    def convert(self, ev: Event) -> tuple[str, Obj] | None:
        if ev.res is not self.res:
            return None
        cur = ev.type != "DELETED" and self(ev.obj)
        old = self(ev.prev) if ev.prev is not None else False
        if ev.type == "DELETED":
            return ("DELETED", ev.obj) if old else None
        if cur and not old:
            return "ADDED", ev.obj
        if cur and old:
            return "MODIFIED", ev.obj
        if old and not cur:
            assert ev.prev is not None
            prev = dict(ev.prev)
            prev["metadata"] = dict(ev.prev["metadata"], resourceVersion=str(ev.rv))
            return "DELETED", prev
        return None


def bookmark(res: Resource, rv: int, annotations: dict[str, str] | None = None) -> Obj:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if annotations:
        meta["annotations"] = annotations
    return {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta}


def stream(
    store: Store,
    flt: WatchFilter,
    resource_version: str | None,
    timeout: float | None,
    bookmarks: bool,
    send_initial: bool,
    client_gone: Callable[[], bool],
    bookmark_interval: float = 5.0,
) -> Iterator[tuple[str, Obj]]:
    deadline = time.monotonic() + timeout if timeout else None
    res = flt.res
    with store.cond:
        ended = store.watches_ended
        expired_status: Obj | None = None
        initial: list[Obj] = []
        from_now = resource_version in (None, "", "0") or send_initial
        if from_now:
            pos = store.rv
            initial = [o for o in matching(store, res, flt.ns) if flt(o)]
        else:
            try:
                pos = int(str(resource_version))
            except ValueError:
                raise errors.bad_request(f'invalid resource version "{resource_version}"') from None
            if events_after(store, pos) is None:
                expired_status = errors.expired(
                    f"too old resource version: {pos} ({oldest_rv(store)})"
                ).status()
    if expired_status is not None:
        yield "ERROR", expired_status
        return
    for obj in initial:
        yield "ADDED", obj
    if send_initial or (from_now and bookmarks):
        yield "BOOKMARK", bookmark(res, pos, {"k8s.io/initial-events-end": "true"})
    last_bookmark = time.monotonic()
    while True:
        with store.cond:
            while store.rv <= pos and not store.stopped and store.watches_ended == ended:
                left = deadline - time.monotonic() if deadline else 0.5
                if left <= 0:
                    break
                store.cond.wait(min(left, 0.5))
                if bookmarks and time.monotonic() - last_bookmark >= bookmark_interval:
                    break
                if client_gone():
                    return
            if store.stopped or store.watches_ended != ended:
                return
            evs = events_after(store, pos)
            if evs is None:
                # Fell behind the history while we were sending: the real server drops
                # slow watchers too ("too slow" -> stream closed); the client re-lists.
                return
            pos = max(pos, store.rv)
        for ev in evs:
            out = flt.convert(ev)
            if out is not None:
                yield out
        now = time.monotonic()
        if bookmarks and now - last_bookmark >= bookmark_interval:
            last_bookmark = now
            yield "BOOKMARK", bookmark(res, pos)
        if deadline and now >= deadline:
            return
