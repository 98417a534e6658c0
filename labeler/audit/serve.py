"""The audit exporter: one LIST + WATCH of nodes, incremental state, Prometheus metrics.

Each resource the exporter keeps is a LIST + WATCH loop in its own thread
(:mod:`labeler.audit.listwatch`: re-listed after 410, the last good state kept through any
other failure, retried with backoff). The nodes are watched here; one thread per DRA driver
of the scope watches that driver's ResourceSlices (:mod:`labeler.audit.slices`), whose
devices put nodes in scope. Nothing is published before both have answered once, so a
scrape never counts a DRA-only node out. With a hot-swap computation handed in, Kueue's
Workloads are watched too (:mod:`labeler.audit.hotswap`), and the node watch feeds it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from labeler.audit.hotswap import Compute, HotSwapExporter
from labeler.audit.listwatch import ListWatch, Loop
from labeler.audit.options import ExporterOptions
from labeler.audit.slices import SliceWatch
from labeler.audit.store import NodeStore
from labeler.base.backoff import Backoff
from labeler.base.logs import logger
from labeler.base.metrics import AuditFigures, audit_metrics, slice_watch_errors, watch_staleness
from labeler.core.hotswap import HotSwapView
from labeler.core.profiles import Profile
from labeler.core.scope import Scope
from labeler.core.states import AuditReport, NodeFacts, build_report
from labeler.kube.nodes import list_nodes, watch_nodes

log = logger(__name__)


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
        monotonic: Callable[[], float] = time.monotonic,
        page: Callable[[Sequence[NodeFacts], HotSwapView | None], str] | None = None,
        hotswap: Compute | None = None,
    ) -> None:
        """``page`` renders the watched facts (and the hot-swap view) as the ``/topology``
        page; ``hotswap`` computes the hot-swap view from the watched nodes and Kueue's
        objects. The command hands both in; without them there is no page, no view.
        ``clock`` stamps what is published; ``monotonic`` times the watches (how long one
        was open, how long one has been down)."""
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
        self.loop = Loop(
            self.stop_event,
            Backoff(self.options.first_backoff, self.options.max_backoff),
            self.options.watch_timeout,
            clock=monotonic,
        )
        self.hot = (
            HotSwapExporter(
                api,
                hotswap,
                self.registry,
                self.loop,
                interval=self.options.hotswap_interval,
                clock=clock,
            )
            if hotswap is not None
            else None
        )
        slice_errors = slice_watch_errors(self.registry)
        self._slice_watches = [
            SliceWatch(api, self.loop, self.store, driver, slice_errors)
            for driver in scope.dra_drivers
        ]
        self._node_watch = NodeWatch(self)
        watch_staleness(self.registry, self.staleness)

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
        return True, self.page(facts, self.hot.view if self.hot else None)

    def staleness(self) -> list[tuple[str, str, float]]:
        """(resource, DRA driver or "", seconds since last in sync) of every watch."""
        watches: list[ListWatch] = [self._node_watch, *self._slice_watches]
        if self.hot:
            watches.append(self.hot.watch)
        return [(w.resource, w.driver, w.fresh.stale()) for w in watches]

    def healthz(self) -> tuple[bool, str]:
        dead = [t.name for t in self._threads if not t.is_alive()]
        if dead and not self.stop_event.is_set():
            return False, f"thread(s) stopped: {', '.join(dead)}"
        return True, "ok"

    def readyz(self) -> tuple[bool, str]:
        """Ready once the first report is made, and while the node watch has not been down
        longer than ``stale_after``: past that, the figures are stale (the process is
        fine, so /healthz stays 200: a restart would not bring the API server back)."""
        if self._report is not None:
            down, limit = self._node_watch.fresh.stale(), self.options.stale_after
            if down > limit:
                why = self._last_error or "no answer yet"
                return False, (
                    f"not ready: the node watch has been down for {down:.0f} s (more than "
                    f"--stale-after {limit:g} s), so the figures are stale: {why}"
                )
            return True, "ok"
        why = self._last_error or next((w.error for w in self._slice_watches if w.error), "")
        if not why and self._last_sync is not None:
            waiting = [w.driver for w in self._slice_watches if not w.synced]
            why = f"waiting for the first list of ResourceSlices ({', '.join(waiting)})"
        return False, f"not ready: {why or 'waiting for the first list of nodes'}"

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        loops = [("audit-watch", self._node_watch.run), ("audit-recompute", self._recompute_loop)]
        loops += [(f"audit-slices-{w.driver}", w.run) for w in self._slice_watches]
        for name, target in loops + (self.hot.threads() if self.hot else []):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self.stop_event.set()
        self.store.changed.set()  # wake the recompute loop
        if self.hot:
            self.hot.wake()

    def join(self, timeout: float) -> bool:
        """Wait for the threads after :meth:`stop`; True when all ended. The watch thread
        ends at its next event (a BOOKMARK at the latest) or when its request times out."""
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    # --- what the node watch (NodeWatch, below) reports -----------------------------

    def _mark_synced(self) -> None:
        self._last_sync = self.clock()
        self._last_error = ""

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


class NodeWatch(ListWatch):
    """The exporter's node watch: every node into its store (and the hot-swap view's)."""

    what = "node"
    resource = "nodes"

    def __init__(self, exporter: AuditExporter) -> None:
        super().__init__(exporter.api, exporter.loop)
        self.exp = exporter

    def relist(self) -> str:
        exp = self.exp
        nodes, rv = list_nodes(self.api, page_size=exp.options.page_size)
        exp.counters.relists.inc()
        exp.store.replace(nodes)
        if exp.hot:
            exp.hot.store.replace_nodes(nodes)
        exp._mark_synced()
        log.info("listed nodes=%d in_scope=%d rv=%s", len(nodes), len(exp.store), rv)
        return rv

    def watch(self, resource_version: str) -> Iterator[str]:
        exp = self.exp
        events = watch_nodes(
            self.api,
            resource_version=resource_version,
            timeout_seconds=self.loop.watch_timeout,
            opened=self.opened,
        )
        for kind, node in events:
            exp.store.apply(kind, node)
            if exp.hot:
                exp.hot.store.apply_node(kind, node)
            exp._mark_synced()
            yield node.resource_version
        exp._mark_synced()  # the server ended the watch normally

    def expired(self) -> None:
        self.exp.counters.errors.labels("expired").inc()

    def failed(self, kind: str, message: str) -> None:
        self.exp.counters.errors.labels(kind).inc()
        self.exp._last_error = message
