"""The exporter's second watch: one DRA driver's ResourceSlices, kept in the node store.

The exporter's LIST + WATCH loop (:mod:`labeler.audit.listwatch`) with
``spec.driver=<driver>``. A cluster that does not serve ``resource.k8s.io/v1`` (404) is a
definite answer — no slices, nothing to wait for — and is asked again every
``Loop.recheck`` seconds, so an upgrade to an API server that serves it is picked up
without a restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import Counter

from labeler.audit.listwatch import ListWatch, Loop
from labeler.audit.store import NodeStore
from labeler.base.logs import logger
from labeler.kube.resourceslices import RESOURCE, list_slices, watch_slices

log = logger(__name__)


class SliceWatch(ListWatch):
    """Keeps ``store``'s slices of ``driver`` current. ``synced`` is True once the first
    LIST has answered (or the API turned out not to be served); ``error`` is the last
    failure, until the next success. ``errors`` counts failures by driver and kind."""

    optional = True
    resource = RESOURCE

    def __init__(
        self, api: Any, loop: Loop, store: NodeStore, driver: str, errors: Counter
    ) -> None:
        super().__init__(api, loop)
        self.what = f"{RESOURCE} (driver {driver})"
        self.store = store
        self.driver = driver
        self.errors = errors
        self.synced = False
        self.served: bool | None = None  # None until the first answer
        self.error = ""

    def relist(self) -> str:
        slices, rv = list_slices(self.api, self.driver)
        self.store.replace_slices(self.driver, slices)
        self._listed(served=True)
        log.info("listed %s driver=%s slices=%d", RESOURCE, self.driver, len(slices))
        return rv

    def watch(self, resource_version: str) -> Iterator[str]:
        events = watch_slices(
            self.api,
            self.driver,
            resource_version=resource_version,
            timeout_seconds=self.loop.watch_timeout,
            opened=self.opened,
        )
        for kind, s, version in events:
            if s is not None:
                self.store.apply_slice(kind, s)
            yield version

    def absent(self) -> None:
        if self.served is not False:
            log.info(
                "the cluster does not serve %s (resource.k8s.io/v1); no DRA devices "
                "of %s are counted (asked again every %.0f s)",
                RESOURCE,
                self.driver,
                self.loop.recheck,
            )
        self.store.replace_slices(self.driver, ())
        self._listed(served=False)

    def expired(self) -> None:
        self.errors.labels(self.driver, "expired").inc()

    def failed(self, kind: str, message: str) -> None:
        self.errors.labels(self.driver, kind).inc()
        self.error = message

    def _listed(self, *, served: bool) -> None:
        self.served = served
        self.error = ""
        if not self.synced:
            self.synced = True
            self.store.changed.set()  # the first complete view: publish it
