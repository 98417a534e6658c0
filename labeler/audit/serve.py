"""The audit exporter: one LIST + WATCH of nodes, incremental state, Prometheus metrics.

Loop: LIST all nodes (paginated) → WATCH from the list's resourceVersion → on a normal
end, WATCH again from the newest version seen; on 410 Expired, LIST again. Any other
failure keeps the last good state (a transient error never makes nodes "disappear"),
is logged with the verb and resource that failed, and is retried with backoff.

Beside it, one thread per DRA driver of the scope watches that driver's ResourceSlices the
same way (:mod:`labeler.audit.slices`): their devices put nodes in scope. Nothing is
published before both have answered once, so a scrape never counts a DRA-only node out.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from labeler.audit.slices import SliceWatch
from labeler.audit.store import NodeStore
from labeler.base.backoff import Backoff
from labeler.base.metrics import AuditFigures, audit_metrics, slice_watch_errors
from labeler.core.profiles import Profile
from labeler.core.scope import Scope
from labeler.core.states import AuditReport, NodeFacts, build_report
from labeler.kube.errors import Expired, KubeError
from labeler.kube.nodes import list_nodes, watch_nodes

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ExporterOptions:
    debounce: float = 0.1  # seconds between a change and its recomputation
    watch_timeout: int = 300  # server-side timeout of one WATCH request
    page_size: int = 500
    first_backoff: float = 1.0  # after a failed LIST or WATCH; doubles up to max_backoff
    max_backoff: float = 30.0


def audit_figures(report: AuditReport, last_sync: float | None) -> AuditFigures:
    """The numbers the exporter publishes (no per-node series)."""
    levels = report.topology.levels
    per_level = Counter(v.level.name for v in report.nesting)
    domains = report.check.domain_sizes
    return AuditFigures(
        states=report.counts(),
        unlabeled_accelerators={
            r: report.unusable_accelerators.get(r, 0) for r in report.accelerators
        },
        nesting_violations={lv.name: per_level.get(lv.name, 0) for lv in levels},
        domains={lv.name: len(domains.get(lv.key, {})) for lv in levels},
        foreign_nodes=len(report.foreign),
        last_sync=last_sync,
    )


class AuditExporter:
    """Keeps the audit current from a node watch and publishes it as metrics."""

    def __init__(
        self,
        api: Any,
        profile: Profile,
        scope: Scope,
        *,
        options: ExporterOptions | None = None,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
        page: Callable[[Sequence[NodeFacts]], str] | None = None,
    ) -> None:
        """``page`` renders the watched facts as the ``/topology`` page (the command hands
        in the map's renderer); without it there is no page."""
        self.api = api
        self.page = page
        self.profile = profile
        self.scope = scope
        self.options = options or ExporterOptions()
        self.clock = clock
        self.store = NodeStore(profile.topology, scope)
        self.registry = registry or CollectorRegistry()
        self.counters = audit_metrics(self.registry, profile.name, self.figures)
        self.stop_event = threading.Event()
        self._report: AuditReport | None = None
        self._report_generation = -1
        self._last_sync: float | None = None
        self._last_error = ""
        self._threads: list[threading.Thread] = []
        slice_errors = slice_watch_errors(self.registry)
        self._slice_watches = [
            SliceWatch(
                api,
                self.store,
                driver,
                stop=self.stop_event,
                backoff=Backoff(self.options.first_backoff, self.options.max_backoff),
                watch_timeout=self.options.watch_timeout,
                errors=slice_errors,
            )
            for driver in scope.dra_drivers
        ]

    # --- what the HTTP side reads ----------------------------------------------------

    @property
    def report(self) -> AuditReport | None:
        return self._report

    def figures(self) -> AuditFigures | None:
        report = self._report
        if report is None:
            return None
        return audit_figures(report, self._last_sync)

    def topology_page(self) -> tuple[bool, str]:
        """The live page (``/topology``), from the watched facts: no API call of its own."""
        if self._report is None or self.page is None:
            return self.readyz()
        _, facts = self.store.snapshot()
        return True, self.page(facts)

    def healthz(self) -> tuple[bool, str]:
        dead = [t.name for t in self._threads if not t.is_alive()]
        if dead and not self.stop_event.is_set():
            return False, f"thread(s) stopped: {', '.join(dead)}"
        return True, "ok"

    def readyz(self) -> tuple[bool, str]:
        if self._report is not None:
            return True, "ok"
        why = self._last_error or next((w.error for w in self._slice_watches if w.error), "")
        if not why and self._last_sync is not None:
            waiting = [w.driver for w in self._slice_watches if not w.synced]
            why = f"waiting for the first list of ResourceSlices ({', '.join(waiting)})"
        return False, f"not ready: {why or 'waiting for the first list of nodes'}"

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        loops = [("audit-watch", self._watch_loop), ("audit-recompute", self._recompute_loop)]
        loops += [(f"audit-slices-{w.driver}", w.run) for w in self._slice_watches]
        for name, target in loops:
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self.stop_event.set()
        self.store.changed.set()  # wake the recompute loop

    def join(self, timeout: float) -> bool:
        """Wait for the threads after :meth:`stop`; True when all ended. The watch thread
        ends at its next event (a BOOKMARK at the latest) or when its request times out."""
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    # --- the watch --------------------------------------------------------------------

    def _watch_loop(self) -> None:
        rv: str | None = None
        backoff = Backoff(self.options.first_backoff, self.options.max_backoff)
        failures = 0
        while not self.stop_event.is_set():
            try:
                if rv is None:
                    nodes, rv = list_nodes(self.api, page_size=self.options.page_size)
                    self.counters.relists.inc()
                    self.store.replace(nodes)
                    self._mark_synced()
                    log.info("listed nodes=%d in_scope=%d rv=%s", len(nodes), len(self.store), rv)
                    del nodes
                for kind, node in watch_nodes(
                    self.api, resource_version=rv, timeout_seconds=self.options.watch_timeout
                ):
                    if node.resource_version:
                        rv = node.resource_version
                    self.store.apply(kind, node)
                    self._mark_synced()
                    if self.stop_event.is_set():
                        return
                self._mark_synced()  # the server ended the watch normally
                failures = 0
                continue
            except Expired as e:
                self.counters.errors.labels("expired").inc()
                log.info("watch expired (%s); listing nodes again", e)
                rv = None
                continue
            except KubeError as e:
                self._failed(type(e).__name__, str(e))
            except Exception as e:  # a broken stream or a bad event: keep the state, retry
                log.exception("unexpected failure in the node watch; retrying")
                self._failed(type(e).__name__, f"{type(e).__name__}: {e}")
            failures += 1
            self.stop_event.wait(backoff.delay(failures))

    def _mark_synced(self) -> None:
        self._last_sync = self.clock()
        self._last_error = ""

    def _failed(self, kind: str, message: str) -> None:
        self.counters.errors.labels(kind).inc()
        self._last_error = message
        log.error("node watch failed: %s", message)

    # --- the recomputation ------------------------------------------------------------

    def _recompute_loop(self) -> None:
        changed = self.store.changed
        while not self.stop_event.is_set():
            changed.wait()
            if self.stop_event.is_set():
                return
            time.sleep(self.options.debounce)  # let a burst of events settle
            changed.clear()
            self.recompute()

    def recompute(self) -> AuditReport:
        """Rebuild the report from the current facts (the only place reports are made)."""
        # Published only once the nodes and every DRA driver's slices have been listed (or
        # the slices are not served). Read before the snapshot: what they say is in it.
        listed = self.store.nodes_listed and all(w.synced for w in self._slice_watches)
        generation, facts = self.store.snapshot()
        started = time.perf_counter()
        report = build_report(
            self.profile.name, self.scope.describe(), self.profile.topology, facts
        )
        if listed and generation >= self._report_generation:
            self._report, self._report_generation = report, generation
        log.debug(
            "recomputed nodes=%d generation=%d took=%.3fs",
            len(facts),
            generation,
            time.perf_counter() - started,
        )
        return report
