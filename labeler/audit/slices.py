"""The exporter's second watch: one DRA driver's ResourceSlices, kept in the node store.

Like the node watch: LIST once (with ``spec.driver=<driver>``), then WATCH from the list's
resourceVersion, again from the newest version after a normal end, LIST again after 410
Expired; any other failure keeps the last state and is retried with backoff. No LIST per
scrape. A cluster that does not serve ``resource.k8s.io/v1`` (404) is a definite answer —
no slices, nothing to wait for — and is asked again every ``recheck`` seconds, so an
upgrade to an API server that serves it is picked up without a restart.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from prometheus_client import Counter

from labeler.audit.store import NodeStore
from labeler.base.backoff import Backoff
from labeler.kube.errors import Expired, KubeError, NotFound
from labeler.kube.resourceslices import RESOURCE, list_slices, watch_slices

log = logging.getLogger(__name__)


class SliceWatch:
    """Keeps ``store``'s slices of ``driver`` current. ``synced`` is True once the first
    LIST has answered (or the API turned out not to be served); ``error`` is the last
    failure, until the next success. ``errors`` counts failures by driver and kind."""

    def __init__(
        self,
        api: Any,
        store: NodeStore,
        driver: str,
        *,
        stop: threading.Event,
        backoff: Backoff,
        watch_timeout: int,
        errors: Counter,
        recheck: float = 300.0,
    ) -> None:
        self.api = api
        self.store = store
        self.driver = driver
        self.stop = stop
        self.backoff = backoff
        self.watch_timeout = watch_timeout
        self.errors = errors
        self.recheck = recheck
        self.synced = False
        self.served: bool | None = None  # None until the first answer
        self.error = ""

    def run(self) -> None:
        rv: str | None = None
        failures = 0
        while not self.stop.is_set():
            try:
                if rv is None:
                    slices, rv = list_slices(self.api, self.driver)
                    self.store.replace_slices(self.driver, slices)
                    self._listed(served=True)
                    log.info("listed %s driver=%s slices=%d", RESOURCE, self.driver, len(slices))
                for kind, s, version in watch_slices(
                    self.api,
                    self.driver,
                    resource_version=rv,
                    timeout_seconds=self.watch_timeout,
                ):
                    rv = version or rv
                    if s is not None:
                        self.store.apply_slice(kind, s)
                    if self.stop.is_set():
                        return
                failures = 0
                continue
            except NotFound:
                if self.served is not False:
                    log.info(
                        "the cluster does not serve %s (resource.k8s.io/v1); no DRA devices "
                        "of %s are counted (asked again every %.0f s)",
                        RESOURCE,
                        self.driver,
                        self.recheck,
                    )
                self.store.replace_slices(self.driver, ())
                self._listed(served=False)
                rv = None
                self.stop.wait(self.recheck)
                continue
            except Expired as e:
                self.errors.labels(self.driver, "expired").inc()
                log.info("%s watch expired (%s); listing again", RESOURCE, e)
                rv = None
                continue
            except KubeError as e:
                self._failed(type(e).__name__, str(e))
            except Exception as e:  # a broken stream or a bad event: keep the state, retry
                log.exception("unexpected failure in the %s watch; retrying", RESOURCE)
                self._failed(type(e).__name__, f"{type(e).__name__}: {e}")
            failures += 1
            self.stop.wait(self.backoff.delay(failures))

    def _listed(self, *, served: bool) -> None:
        self.served = served
        self.error = ""
        if not self.synced:
            self.synced = True
            self.store.changed.set()  # the first complete view: publish it

    def _failed(self, kind: str, message: str) -> None:
        self.errors.labels(self.driver, kind).inc()
        self.error = message
        log.error("%s watch (driver %s) failed: %s", RESOURCE, self.driver, message)
