"""One reconcile step of the agent: the last good source outcome → this node's labels.

``Reconciler`` holds what one step needs to remember between steps (the outcome the labels
come from, the node as last seen, when it last wrote) and does the step: decide
(``decide.desired_from_outcome``, pure), plan and write at most one merge patch
(``LabelWriter``: 409 → re-read and re-plan), record the result, then open the readiness
gate (gate.py). It never raises for an API error: the result says what failed, and the
loop (loop.py) schedules the retry. Which outcome is acted on at all is decided here too:
a change of topology waits until ``--confirm-reads`` reads agree (confirm.py).

The step runs on the loop thread only; ``read_source`` also runs on the source thread and
touches only the metrics and Events, which are thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from labeler.agent.config import AgentConfig
from labeler.agent.confirm import Confirmation, Signature, recorded_signature, signature
from labeler.agent.decide import (
    ReconcileResult,
    Status,
    desired_from_outcome,
    node_is_labeled,
    unknown_labels,
    unknown_levels,
)
from labeler.agent.events import AgentEvents, short
from labeler.agent.gate import ReadinessGate
from labeler.base.clock import SYSTEM_CLOCK, Clock
from labeler.base.errors import LabelerError
from labeler.base.logs import logger
from labeler.core.node import NodeInfo
from labeler.core.plan import Conflict, Desired, change_lines, describe
from labeler.kube.errors import KubeError
from labeler.kube.nodes import LabelWriter
from labeler.sources import NoData, Reading, Source, SourceError

log = logger(__name__)


class Reconciler:
    """Brings one node to the last good source outcome, one step at a time."""

    def __init__(
        self,
        config: AgentConfig,
        source: Source,
        api: Any,
        events: AgentEvents,
        *,
        stop: threading.Event,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.config = config
        self.source = source
        self.events = events
        self.metrics = events.metrics
        self.writer = LabelWriter(api, clock=clock)
        self.gate = ReadinessGate(
            api,
            config.node,
            events,
            remove_taint=config.remove_taint,
            set_condition=config.set_condition,
        )
        # Which label key each role the source reports is written to: the agent's scope.
        self.keys = config.profile.keys_for(source.roles)
        self._level_roles = tuple(r for r in source.roles.levels if r in self.keys)
        self._confirmation = Confirmation(config.confirm_reads)
        self._applied: Signature | None = None  # what the labels were last written from
        self._stop = stop
        self._clock = clock
        self.outcome: Reading | NoData | None = None  # the outcome the labels come from
        self.node: NodeInfo | None = None  # the node as last seen; None once stale
        self.ready = False  # a reconcile has completed (for /readyz)
        self._last_write = float("-inf")

    # --- the source's outcome -------------------------------------------------------------

    def read_source(self) -> Reading | NoData:
        """Read the source once, counting the outcome. Raises SourceError."""
        name = self.source.name
        start = time.perf_counter()
        try:
            try:
                outcome = self.source.read()
            except SourceError:
                raise
            except Exception as e:
                # A source that fails in a way it did not foresee (RecursionError on a
                # deeply nested answer, a bug) is still only a failed read: the loop goes
                # on, retries with backoff, and the labels stay.
                self.metrics.thread_errors.labels("source").inc()
                log.debug("unexpected error reading source=%s", name, exc_info=True)
                raise SourceError(f"unexpected {type(e).__name__}: {short(e)}") from e
        except SourceError as e:
            self.metrics.source_reads.labels(name, "error").inc()
            self.events.emit("Warning", "TopologySourceUnavailable", f"{name}: {e}")
            raise
        finally:
            self.metrics.source_read_duration.labels(name).observe(time.perf_counter() - start)
        result = "reading" if isinstance(outcome, Reading) else "no_data"
        self.metrics.source_reads.labels(name, result).inc()
        return outcome

    def accept(self, outcome: Reading | NoData, *, confirm: bool = True) -> bool:
        """Whether a new outcome is acted on now (confirm.py; ``confirm=False``: at once,
        as ``--once`` does); if so it becomes the one the labels come from, and the labels
        it cannot tell are reported. No data never needs confirming: it writes nothing, or
        (isolate) fills only absent levels."""
        if isinstance(outcome, Reading) and confirm:
            candidate = signature(outcome, self._level_roles)
            baseline = self._applied
            if baseline is None and self.node is not None:
                baseline = recorded_signature(self.node.source_ids, self.keys, self._level_roles)
            if not self._confirmation.offer(baseline, candidate):
                self.metrics.unconfirmed_reads.labels(self.source.name).inc()
                log.warning(
                    "topology change held back until confirmed node=%s source=%s "
                    "reads=%d/%d document=%s",
                    self.config.node,
                    self.source.name,
                    self._confirmation.pending,
                    self._confirmation.needed,
                    outcome.details.get("document", ""),
                )
                return False
            self._applied = candidate
        self.outcome = outcome
        unknown = unknown_labels(self.source.roles, outcome, self.keys)
        self.events.unknown(self.source.name, unknown)
        return True

    # --- the step -------------------------------------------------------------------------

    def reconcile(self, node: NodeInfo) -> ReconcileResult:
        """Bring ``node`` to the last good outcome, then open the readiness gate if asked
        and due. Never raises for API errors."""
        result, labeled = self._reconcile(node)
        if self.gate.enabled and not self.config.dry_run:
            self.gate.update(node, result, labeled=labeled)
        return result

    def _reconcile(self, node: NodeInfo) -> tuple[ReconcileResult, bool]:
        """The result, and whether every level label is present and current after it."""
        cfg = self.config
        self.node = node
        self.events.node_uid(node.uid)
        outcome = self.outcome
        if outcome is None:
            return ReconcileResult(Status.WAITING, "no source outcome yet"), False
        try:
            desired = desired_from_outcome(
                cfg.profile, outcome, cfg.encoding, cfg.node, cfg.on_missing, keys=self.keys
            )
        except LabelerError as e:
            return error(f"cannot encode the topology of {cfg.node}: {e}"), False
        if desired is not None and cfg.slinky is not None:
            desired = cfg.slinky.add_to(desired, node.labels)
        if desired is None:
            reason = outcome.reason if isinstance(outcome, NoData) else ""
            labeled = self._done(node.labels, None, conflicts=())
            text = f"{cfg.node}: no topology data ({reason}); nothing to write"
            return ReconcileResult(Status.NO_DATA, reason, text=text), labeled
        self._pace()
        try:
            result = self.writer.write(node, desired, adopt=cfg.adopt, dry_run=cfg.dry_run)
        except KubeError as e:
            self.metrics.label_writes.labels("error").inc()
            return error(f"cannot write the labels of node {cfg.node}: {e}"), False
        plan = result.plan
        lines = describe(plan, node.labels, source_ids=desired.source_ids, show_unchanged=True)
        text = "\n".join(lines)
        if result.written:
            self._last_write = self._clock.monotonic()
            self.node = None  # stale now; the watch brings the new version
            self.metrics.label_writes.labels("success").inc()
            changes = "; ".join(change_lines(replace(plan, conflicts=()), node.labels))
            if changes:
                self.events.emit("Normal", "TopologyLabelsUpdated", f"labels updated: {changes}")
        final = {**node.labels, **plan.labels} if result.written else dict(node.labels)
        final = {k: v for k, v in final.items() if v is not None}
        labeled = self._done(final, desired, conflicts=plan.conflicts)
        if plan.conflicts:
            message = "; ".join(str(c) for c in plan.conflicts)
            return ReconcileResult(Status.CONFLICT, message, plan, result.written, text), labeled
        missing = unknown_levels(cfg.profile, outcome, self.keys)
        if missing:
            return ReconcileResult(Status.INCOMPLETE, missing, plan, result.written, text), labeled
        status = Status.LABELED if isinstance(outcome, Reading) else Status.NO_DATA
        return ReconcileResult(status, "", plan, result.written, text), labeled

    def _pace(self) -> None:
        wait = self._last_write + self.config.min_write_interval - self._clock.monotonic()
        if wait > 0:
            self._clock.wait(self._stop, wait)

    def _done(
        self, labels: Mapping[str, str], desired: Desired | None, *, conflicts: Sequence[Conflict]
    ) -> bool:
        """Record a completed reconcile; whether the node is labeled after it."""
        labeled = node_is_labeled(self.config.profile, labels, desired)
        self.metrics.node_labeled.set(1 if labeled and not conflicts else 0)
        self.metrics.last_success.set(time.time())
        self.events.conflicts(conflicts)
        if not self.config.dry_run:
            self.ready = True
        return labeled

    def not_found(self) -> str:
        return (
            f"node {self.config.node!r} does not exist; set --node-name or NODE_NAME "
            "(the DaemonSet passes spec.nodeName through the downward API)"
        )


def error(message: str) -> ReconcileResult:
    return ReconcileResult(Status.ERROR, message)
