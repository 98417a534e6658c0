"""Bulk writes: carrying out a plan (labeler.bulk.apply) against the cluster, and what the
run did — one outcome per node, one count per CSV row, the lines in the CSV's order.

``run`` is the only part that talks to the cluster, through
labeler.kube.nodes.LabelWriter (which re-reads and re-plans on 409), many nodes at once on a
bounded pool of threads (labeler.kube.many). A node's failure is that node's outcome; the
others go on; the first Ctrl-C or SIGTERM stops new writes (docs/architecture.md).
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from labeler.base.errors import Exit, Terminated
from labeler.base.logs import logger
from labeler.bulk.apply import Action, BulkPlan, NodeDiff, describe_diff
from labeler.bulk.pace import Pace
from labeler.core.plan import Conflict, LabelPlan, describe
from labeler.kube.errors import Interrupted, KubeError
from labeler.kube.many import run_many, stopped_in_flight
from labeler.kube.nodes import LabelWriter
from labeler.kube.steps import Pause, Steps

log = logger(__name__)


class RateLimiter:
    """At most ``qps`` acquisitions per second across threads (0 = unlimited).

    Spaces calls evenly rather than in bursts, so a 429 from the server is the exception.
    """

    def __init__(self, qps: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = 1.0 / qps if qps > 0 else 0.0
        self._clock = clock
        self._next = 0.0
        self._lock = threading.Lock()

    def delay(self) -> float:
        """Reserve the next slot; return how long the caller must wait for it."""
        if not self.interval:
            return 0.0
        with self._lock:
            now = self._clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
            return slot - now


@dataclass(frozen=True)
class NodeOutcome:
    """What happened to one node: the plan actually sent, or the error."""

    node: str
    plan: LabelPlan | None
    current: Mapping[str, str]
    written: bool = False  # a PATCH took effect (a refused one, 409, is no write)
    error: str | None = None


ERROR_SHOWN = 500  # characters of an unexpected error kept in a node's outcome


def run(
    api: Any,
    plan: BulkPlan,
    *,
    pace: Pace | None = None,
    on_done: Callable[[NodeOutcome], None] | None = None,
) -> BulkReport:
    """Patch every node whose plan changes something, ``pace.concurrency`` at a time and
    at most ``pace.qps`` a second, and report what happened; missing nodes are refused
    first (unless skipped).

    The writer (labeler.kube.nodes.LabelWriter) re-plans from the node it is given, and on
    a 409 re-reads the node and plans again, so a concurrent edit is never overwritten
    blindly. An error on one node is recorded and the others go on; nothing is retried here
    beyond what the writer already does (429/5xx with backoff and Retry-After). Ctrl-C or
    SIGTERM: no new write starts, writes under way get a few seconds to finish
    (labeler.kube.many.STOP_GRACE), and the report says the run was interrupted; a write
    started but not finished is an outcome with its error, so every started node has
    exactly one outcome.
    """
    pace = pace or Pace()
    err = plan.missing_error()
    if err is not None:
        raise err
    start = time.monotonic()
    writer = LabelWriter(api)
    todo = plan.to_change
    limiter = RateLimiter(pace.qps)
    outcomes: list[NodeOutcome] = []
    started: dict[str, NodeDiff] = {}

    def one(diff: NodeDiff) -> Steps[NodeOutcome | None]:
        node = plan.nodes[diff.node]
        assert diff.desired is not None and diff.current is not None
        wait = limiter.delay()
        if wait > 0:
            try:
                yield Pause(wait)
            except Interrupted:  # stopped before this node's turn (--qps): not started
                return None
        started[diff.node] = diff
        try:
            result = yield from writer.steps(
                node, diff.desired, adopt=plan.options.adopt, plan=diff.plan
            )
        except Exception as exc:  # one node's failure must not stop the others
            if not isinstance(exc, KubeError):
                log.exception("unexpected error writing node=%s", diff.node)
            text = (str(exc) or repr(exc))[:ERROR_SHOWN]
            return NodeOutcome(diff.node, diff.plan, diff.current, error=text)
        return NodeOutcome(diff.node, result.plan, diff.current, result.written)

    def record(outcome: NodeOutcome | None) -> None:
        if outcome is None:
            return
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)

    width = max(1, min(pace.concurrency, len(todo)))
    with StopOnSignal() as stop:
        run_many(writer.api, map(one, todo), width, record, stopping=stop.requested)
    finished = {o.node for o in outcomes}
    for name, diff in started.items():
        if name not in finished:  # given up in flight at a stop, or lost to a bug (logged)
            error = str(stopped_in_flight()) if stop.exit_code else "no result (see the log)"
            assert diff.current is not None
            record(NodeOutcome(name, diff.plan, diff.current, error=error))
    return BulkReport(plan, tuple(outcomes), time.monotonic() - start, stop.exit_code)


class StopOnSignal:
    """While writing, the first Ctrl-C or SIGTERM (kubectl delete of a Job's pod, systemd,
    a timeout) only asks the writes to stop: no new one starts, those under way get
    labeler.kube.many.STOP_GRACE to finish, and the report of what was written comes before
    exit 130/143. A
    second one stops at once (KeyboardInterrupt, or Terminated for SIGTERM). Signals can be
    handled only in the main thread; elsewhere this does nothing."""

    def __init__(self) -> None:
        self.exit_code = 0
        self._previous: dict[int, Any] = {}

    def requested(self) -> bool:
        return bool(self.exit_code)

    def _stop(self, signum: int, frame: Any) -> None:
        if self.exit_code:
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        self.exit_code = Exit.TERMINATED if signum == signal.SIGTERM else Exit.INTERRUPTED

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._stop)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


# Every row of a CSV counts once in the summary, in exactly one of these.
LABELED, UNCHANGED, FAILED, CONFLICTS = "labeled", "unchanged", "failed", "with conflicts"
MISSING, SKIPPED, NOT_WRITTEN = "missing", "skipped", "not written"
KINDS = (LABELED, UNCHANGED, FAILED, CONFLICTS, MISSING, SKIPPED, NOT_WRITTEN)


def row_kind(diff: NodeDiff, outcome: NodeOutcome | None) -> str:
    """Where one row counts. A write that left a conflict in place counts as a conflict
    (the node is not as the CSV says); a write whose re-plan after a 409 found nothing left
    to do counts as unchanged; a row with changes and no outcome was never written."""
    if diff.skipped:
        return SKIPPED
    if diff.missing:
        return MISSING
    if not diff.changes:
        return CONFLICTS if diff.conflicts else UNCHANGED
    if outcome is None:
        return NOT_WRITTEN
    if outcome.error:
        return FAILED
    if outcome.plan is not None and outcome.plan.conflicts:
        return CONFLICTS
    return LABELED if outcome.written else UNCHANGED


@dataclass(frozen=True)
class BulkReport:
    """The end of an apply/delete: counts for the summary and the exit code."""

    plan: BulkPlan
    outcomes: tuple[NodeOutcome, ...]
    seconds: float
    interrupted: int = 0  # the exit code of the signal that stopped the writes, if one did

    @functools.cached_property
    def rows(self) -> dict[str, tuple[str, ...]]:
        """Kind (KINDS) → the nodes counted there, in the CSV's order; each row once."""
        done = {o.node: o for o in self.outcomes}
        rows: dict[str, list[str]] = {kind: [] for kind in KINDS}
        for diff in self.plan.diffs:
            rows[row_kind(diff, done.get(diff.node))].append(diff.node)
        return {kind: tuple(nodes) for kind, nodes in rows.items()}

    @property
    def not_written(self) -> int:
        """Nodes with changes that were never attempted (the run was interrupted)."""
        return len(self.rows[NOT_WRITTEN])

    @property
    def failed(self) -> list[NodeOutcome]:
        return sorted((o for o in self.outcomes if o.error), key=lambda o: o.node)

    @property
    def written(self) -> list[NodeOutcome]:
        return [o for o in self.outcomes if o.written]

    def conflicted(self) -> dict[str, tuple[Conflict, ...]]:
        """Node → the conflicts left in place, from the plan actually sent (a 409 re-plans)."""
        done = {o.node: o for o in self.outcomes}
        found = {}
        for d in self.plan.diffs:
            o = done.get(d.node)
            p = o.plan if o is not None and o.error is None else d.plan
            if p is not None and p.conflicts:
                found[d.node] = p.conflicts
        return found

    @property
    def conflicts(self) -> int:
        return len(self.rows[CONFLICTS])

    @property
    def exit_code(self) -> int:
        """130/143 if interrupted, 1 if a node failed (or was not written), 3 if conflicts
        were left, else 0."""
        if self.interrupted:
            return self.interrupted
        if self.rows[FAILED] or self.rows[NOT_WRITTEN]:
            return Exit.ERROR
        return Exit.INCOMPLETE if self.rows[CONFLICTS] else Exit.OK

    def summary(self) -> str:
        """``N node(s): …`` with every row in exactly one count (they add up to N)."""
        count = {kind: len(nodes) for kind, nodes in self.rows.items()}
        verb = "labeled" if self.plan.options.action is Action.APPLY else "cleaned"
        text = (
            f"{len(self.plan.diffs)} node(s): {count[LABELED]} {verb}, "
            f"{count[UNCHANGED]} unchanged, {count[FAILED]} failed, "
            f"{count[CONFLICTS]} with conflicts, {count[MISSING]} missing, "
            f"{count[SKIPPED]} skipped"
        )
        if count[NOT_WRITTEN] or self.interrupted:
            text += f", {count[NOT_WRITTEN]} not written"
            text += " (interrupted)" if self.interrupted else ""
        return text + f" ({len(self.written)} patches in {self.seconds:.1f}s)"


class InOrder:
    """The per-node result lines of a run in the CSV's order, whatever order the writes end
    in: a node's lines are given out as soon as every row before it has its result, so two
    runs of one CSV print the same lines in the same order (and output still streams)."""

    def __init__(self, plan: BulkPlan, *, show_unchanged: bool = False) -> None:
        self._diffs = plan.diffs
        self._next = 0
        self._waiting: dict[str, NodeOutcome] = {}
        self._show_unchanged = show_unchanged

    def add(self, outcome: NodeOutcome) -> list[str]:
        """The lines that are ready now that ``outcome`` is known."""
        self._waiting[outcome.node] = outcome
        return self._release(stop_at_gap=True)

    def rest(self) -> list[str]:
        """At the end: every line not given out yet (rows never written have none)."""
        return self._release(stop_at_gap=False)

    def _release(self, *, stop_at_gap: bool) -> list[str]:
        lines: list[str] = []
        while self._next < len(self._diffs):
            diff = self._diffs[self._next]
            if diff.changes:
                outcome = self._waiting.pop(diff.node, None)
                if outcome is None and stop_at_gap:
                    break
                if outcome is not None:
                    lines.extend(outcome_lines(outcome))
            else:
                lines.extend(describe_diff(diff, show_unchanged=self._show_unchanged))
            self._next += 1
        return lines


def outcome_lines(outcome: NodeOutcome) -> list[str]:
    """A written node's changes, or its failure, as one line each."""
    if outcome.error:
        return [f"{outcome.node}: failed: {outcome.error}"]
    if outcome.plan is None:
        return []
    return describe(outcome.plan, outcome.current)
