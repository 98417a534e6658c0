"""The exporter's hot-swap view: kept current from the node and Workload watches.

The view itself is Kueue's simulation, which the audit does not know: the command hands in
the function that computes it (``compute``: nodes and Kueue's objects in, a
:class:`labeler.core.hotswap.HotSwapView` out). Recomputing costs a few seconds at 10,000
nodes, so it runs at most once per ``interval`` seconds, in its own thread, after a change;
every scrape publishes the last view (``figures``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from labeler.audit.kueue_watch import KueueStore, KueueWatch
from labeler.audit.listwatch import Loop
from labeler.base.logs import logger
from labeler.base.metrics import HotSwapFigures, hotswap_metrics
from labeler.core.capacity import Node
from labeler.core.hotswap import HotSwapView

log = logger(__name__)
Compute = Callable[[Sequence[Node], Sequence[Mapping[str, Any]]], HotSwapView]


class HotSwapExporter:
    def __init__(
        self,
        api: Any,
        compute: Compute,
        registry: CollectorRegistry,
        loop: Loop,
        *,
        interval: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.compute = compute
        self.stop_event = loop.stop
        self.interval = interval
        self.clock = clock
        self.store = KueueStore()
        self.view: HotSwapView | None = None
        self._computed: float | None = None
        self.watch = KueueWatch(api, loop, self.store, hotswap_metrics(registry, self.figures))

    def figures(self) -> HotSwapFigures | None:
        view = self.view
        if view is None or self._computed is None:
            return None
        return HotSwapFigures(
            by_cluster_queue=view.by_cluster_queue(),
            at_risk_nodes=len(view.risky_nodes()),
            computed=self._computed,
            kueue=bool(self.store.served),
        )

    def threads(self) -> list[tuple[str, Callable[[], None]]]:
        return [("hotswap-watch", self.watch.run), ("hotswap-compute", self._compute_loop)]

    def wake(self) -> None:
        self.store.changed.set()

    def _compute_loop(self) -> None:
        changed = self.store.changed
        last = 0.0
        while not self.stop_event.is_set():
            changed.wait()
            if self.stop_event.is_set():
                return
            # at most one recomputation per interval: a burst of changes costs one
            self.stop_event.wait(max(0.0, last + self.interval - time.monotonic()))
            changed.clear()
            last = time.monotonic()
            self.recompute()

    def recompute(self) -> HotSwapView:
        nodes, objects = self.store.snapshot()
        started = time.perf_counter()
        view = self.compute(nodes, objects)
        self.view, self._computed = view, self.clock()
        log.info(
            "hot swap computed workloads=%d at_risk=%d took=%.2fs",
            len(view.workloads),
            len(view.at_risk),
            time.perf_counter() - started,
        )
        return view
