"""The exporter's one LIST + WATCH loop, run in a thread for each resource it keeps current:
nodes (:mod:`labeler.audit.serve`), each DRA driver's ResourceSlices
(:mod:`labeler.audit.slices`) and Kueue's Workloads (:mod:`labeler.audit.kueue_watch`).

LIST → WATCH from the list's resourceVersion → after a normal end, WATCH again from the
newest version seen; after 410 Expired, LIST again. For an optional resource, a cluster
that does not serve it (404) is an answer, not a failure: what was kept is dropped and the
API is asked again every ``recheck`` seconds, so an upgrade that serves it is picked up
without a restart. Any other failure keeps the last good state (a transient error never
makes objects "disappear"), is counted, logged with the verb and resource that failed,
and retried with backoff. No scrape reads the API: the threads keep the state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from labeler.base.backoff import Backoff
from labeler.kube.errors import Expired, KubeError, NotFound

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Loop:
    """How every watch of one exporter runs."""

    stop: threading.Event  # set: each loop ends at its next event or wait
    backoff: Backoff  # after a failed LIST or WATCH
    watch_timeout: int = 300  # seconds the server keeps one WATCH request open
    recheck: float = 300.0  # seconds before an API not served is asked again


class ListWatch:
    """A subclass says what one LIST keeps (:meth:`relist`, returning the list's
    resourceVersion) and what one WATCH keeps (:meth:`watch`, yielding each event's
    resourceVersion, "" where it carries none); :meth:`run` is the loop."""

    what = "objects"  # as the logs name the watch
    optional = False  # True: a 404 means "not served" (absent), not a failure

    def __init__(self, api: Any, loop: Loop) -> None:
        self.api = api
        self.loop = loop
        self.stop = loop.stop

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
        failures = 0
        while not self.stop.is_set():
            try:
                if rv is None:
                    rv = self.relist()
                for version in self.watch(rv):
                    rv = version or rv
                    if self.stop.is_set():
                        return
                failures = 0  # the server ended the watch normally: watch again
                continue
            except Expired as e:
                log.info("%s watch expired (%s); listing again", self.what, e)
                self.expired()
                rv = None
                continue
            except KubeError as e:
                if self.optional and isinstance(e, NotFound):
                    self.absent()
                    rv = None
                    self.stop.wait(self.loop.recheck)
                    continue
                self._failed(type(e).__name__, str(e))
            except Exception as e:  # a broken stream or a bad event: keep the state, retry
                log.exception("unexpected failure in the %s watch; retrying", self.what)
                self._failed(type(e).__name__, f"{type(e).__name__}: {e}")
            failures += 1
            self.stop.wait(self.loop.backoff.delay(failures))

    def _failed(self, kind: str, message: str) -> None:
        log.error("%s watch failed: %s", self.what, message)
        self.failed(kind, message)
