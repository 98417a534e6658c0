"""The exporter's one LIST + WATCH loop, run in a thread for each resource it keeps current:
nodes (:mod:`labeler.audit.serve`), each DRA driver's ResourceSlices
(:mod:`labeler.audit.slices`) and Kueue's Workloads (:mod:`labeler.audit.kueue_watch`).

LIST → WATCH from the list's resourceVersion → after a normal end, WATCH again from the
newest version seen; after 410 Expired, LIST again. For an optional resource, a cluster
that does not serve it (404) is an answer, not a failure: what was kept is dropped and the
API is asked again every ``recheck`` seconds, so an upgrade that serves it is picked up
without a restart. Any other failure keeps the last good state (a transient error never
makes objects "disappear"), is counted, logged with the verb and resource that failed,
and retried as :class:`labeler.base.backoff.Reconnect` says: a watch that was working
when it broke is opened again after the first delay, only failures in a row back off
further. No scrape reads the API: the threads keep the state.

Each loop knows how fresh its state is (:class:`Freshness`): in sync from a completed LIST
and while its watch is open, out of sync from the moment a call fails until a watch is
open again. The exporter publishes it per resource and turns not ready when the node
watch has been down too long.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from labeler.base.backoff import QUICK_FOR, Backoff, Reconnect
from labeler.base.logs import logger
from labeler.kube.errors import Expired, KubeError, NotFound

log = logger(__name__)


@dataclass(frozen=True)
class Loop:
    """How every watch of one exporter runs."""

    stop: threading.Event  # set: each loop ends at its next event or wait
    backoff: Backoff  # after a failed LIST or WATCH
    watch_timeout: int  # seconds the server keeps one WATCH request open
    recheck: float = 300.0  # seconds before an API not served is asked again
    quick_for: float = QUICK_FOR  # seconds after a working watch broke: retried each first
    clock: Callable[[], float] = time.monotonic  # how long a watch was open, or down


class Freshness:
    """Since when a watched resource is out of sync with the API server (None: in sync).
    Written by its loop's thread, read by scrapes and probes: one attribute, replaced
    whole, so a reader never sees half a change."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._since: float | None = clock()  # not in sync before the first LIST

    def synced(self) -> None:
        self._since = None

    def lost(self) -> None:
        if self._since is None:
            self._since = self.clock()

    def stale(self) -> float:
        """Seconds since the resource was last in sync; 0 while it is."""
        since = self._since
        return 0.0 if since is None else max(0.0, self.clock() - since)


class ListWatch:
    """A subclass says what one LIST keeps (:meth:`relist`, returning the list's
    resourceVersion) and what one WATCH keeps (:meth:`watch`, yielding each event's
    resourceVersion, "" where it carries none); :meth:`run` is the loop."""

    what = "objects"  # as the logs name the watch
    resource = ""  # as the metrics name it (plural.group)
    driver = ""  # a DRA driver's ResourceSlices: its name
    optional = False  # True: a 404 means "not served" (absent), not a failure

    def __init__(self, api: Any, loop: Loop) -> None:
        self.api = api
        self.loop = loop
        self.stop = loop.stop
        self.reconnect = Reconnect(loop.backoff, quick_for=loop.quick_for, clock=loop.clock)
        self.fresh = Freshness(loop.clock)

    def opened(self) -> None:
        """The watch is up (the server has begun its answer): a subclass hands this to the
        watch call."""
        self.reconnect.opened()
        self.fresh.synced()

    def relist(self) -> str:
        raise NotImplementedError

    def watch(self, resource_version: str) -> Iterator[str]:
        raise NotImplementedError

    def absent(self) -> None:
        """The cluster does not serve the resource (optional ones only)."""

    def expired(self) -> None:
        """The watch's resourceVersion was too old (410); a LIST follows."""

    def failed(self, kind: str, message: str) -> None:
        """A call failed (``kind``: the error's class); the loop logs it and backs off."""

    def run(self) -> None:
        rv: str | None = None
        while not self.stop.is_set():
            try:
                if rv is None:
                    rv = self.relist()
                    self.fresh.synced()
                for version in self.watch(rv):
                    rv = version or rv
                    self.reconnect.delivered()
                    if self.stop.is_set():
                        return
                self.reconnect.ended()  # the server ended the watch normally: watch again
                continue
            except Expired as e:
                log.info("%s watch expired (%s); listing again", self.what, e)
                self.fresh.lost()  # until the LIST is back
                self.expired()
                rv = None
                continue
            except KubeError as e:
                if self.optional and isinstance(e, NotFound):
                    self.absent()
                    self.fresh.synced()  # "not served" is the cluster's current answer
                    rv = None
                    self.stop.wait(self.loop.recheck)
                    continue
                self.fresh.lost()
                self._failed(type(e).__name__, str(e))
            except Exception as e:  # a broken stream or a bad event: keep the state, retry
                self.fresh.lost()
                log.exception("unexpected failure in the %s watch; retrying", self.what)
                self._failed(type(e).__name__, f"{type(e).__name__}: {e}")
            self.stop.wait(self.reconnect.failed())

    def _failed(self, kind: str, message: str) -> None:
        log.error("%s watch failed: %s", self.what, message)
        self.failed(kind, message)
