"""Bulk labeling from a CSV: plan (a diff per node against one LIST), then apply or delete.

The flow is one-way and validated up front: the whole CSV is checked (labeler.core.sheet),
the nodes are listed once, every node's change is planned with the ownership rules
(labeler.core.plan, docs/architecture.md), missing nodes stop the run before the first
write, and only nodes whose plan is not a no-op get one patch each. So a re-run of the same
CSV makes zero writes, and a label the project does not own is never overwritten or removed without
``--adopt``.

Planning and formatting here are pure; ``execute`` is the only part that talks to the
cluster, through labeler.kube.nodes.LabelWriter (which re-reads and re-plans on 409).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from labeler.base.errors import Exit, InputError, Terminated
from labeler.core.node import NodeLabels
from labeler.core.plan import BULK, Conflict, Desired, LabelPlan, describe, plan_labels
from labeler.core.profiles import Profile
from labeler.core.sheet import CsvRow, LabelSheet
from labeler.kube.errors import KubeError
from labeler.kube.mux import run_many
from labeler.kube.nodes import LabelWriter, list_node_labels
from labeler.kube.steps import Pause, Steps

if TYPE_CHECKING:
    from labeler.core.slinky import Slinky

log = logging.getLogger(__name__)

MISSING_SHOWN = 10  # missing nodes named in the error; the heading counts them all


class Action(Enum):
    APPLY = "apply"
    DELETE = "delete"


@dataclass(frozen=True)
class BulkOptions:
    """How to read the CSV against the cluster.

    - ``adopt``: take over (apply) or remove (delete) values the project does not own, as
      ``kubectl label --overwrite`` / ``key-`` do (the MindCluster twin always does).
    - ``all_keys``: delete only — remove every CSV key, also where the node's cell is empty.
    - ``skip_missing``: nodes of the CSV that are not in the cluster are reported, not fatal.
    - ``slinky``: also keep the Slinky topology annotation, computed from each node's
      labels as they will be after the write.
    """

    action: Action = Action.APPLY
    adopt: bool = False
    all_keys: bool = False
    skip_missing: bool = False
    slinky: Slinky | None = None


def desired_from_row(row: CsvRow, keys: Sequence[str], opts: BulkOptions) -> Desired | None:
    """What the CSV asks of one node; None when the row asks nothing (skipped)."""
    if opts.action is Action.APPLY:
        # An empty cell leaves the key as it is (MindCluster's rule): nothing to prune.
        return Desired(set=dict(row.values), writer=BULK) if row.values else None
    remove = frozenset(keys) if opts.all_keys else frozenset(row.values)
    return Desired(remove=remove, writer=BULK) if remove else None


@dataclass(frozen=True)
class NodeDiff:
    """One CSV row against the node as listed: the plan, or why there is none."""

    node: str
    line: int
    desired: Desired | None
    plan: LabelPlan | None = None
    current: Mapping[str, str] | None = None  # the node's labels; None = not in the cluster

    @property
    def missing(self) -> bool:
        return self.current is None and self.desired is not None

    @property
    def skipped(self) -> bool:
        return self.desired is None

    @property
    def changes(self) -> bool:
        return self.plan is not None and not self.plan.is_noop

    @property
    def conflicts(self) -> bool:
        return self.plan is not None and bool(self.plan.conflicts)


@dataclass(frozen=True)
class BulkPlan:
    """The diff of a whole CSV against the cluster. No I/O; printable and countable."""

    path: str
    options: BulkOptions
    diffs: tuple[NodeDiff, ...]
    nodes: Mapping[str, NodeLabels]

    @property
    def to_change(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.changes]

    @property
    def unchanged(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.plan is not None and d.plan.is_noop]

    @property
    def with_conflicts(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.conflicts]

    @property
    def missing(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.missing]

    @property
    def skipped(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.skipped]

    def warnings(self) -> list[str]:
        what = (
            "no values (an empty cell leaves a label as it is)"
            if self.options.action is Action.APPLY
            else "no values to delete (empty cells are kept unless --all-keys)"
        )
        return [f"{self.path}:{d.line}: node {d.node!r} has {what}; skipped" for d in self.skipped]

    def missing_error(self) -> InputError | None:
        """The error that stops apply/delete before any write, or None."""
        missing = self.missing
        if not missing or self.options.skip_missing:
            return None
        # A CSV for the wrong cluster misses every node: name a few, count the rest.
        shown = missing[:MISSING_SHOWN]
        problems = [f"{self.path}:{d.line}: node {d.node!r} is not in the cluster" for d in shown]
        if len(missing) > len(shown):
            problems.append(f"… and {len(missing) - len(shown)} more")
        return InputError(
            problems,
            heading=(
                f"{len(missing)} node(s) of {self.path} are not in the cluster; nothing "
                "written. Fix the names (see 'kubectl get nodes'), check --context, or pass "
                "--skip-missing-nodes to label the others:"
            ),
        )

    def summary(self) -> str:
        return (
            f"{len(self.diffs)} node(s): {len(self.to_change)} to change, "
            f"{len(self.unchanged)} unchanged, {len(self.with_conflicts)} with conflicts, "
            f"{len(self.missing)} missing, {len(self.skipped)} skipped"
        )


def plan_bulk(
    sheet: LabelSheet, nodes: Iterable[NodeLabels], opts: BulkOptions = BulkOptions()
) -> BulkPlan:
    """Diff every row of ``sheet`` against the listed ``nodes`` under the ownership rules."""
    by_name = {n.name: n for n in nodes}
    diffs = []
    # Rows repeat a few combinations of values: a Desired is a frozen value, so one serves
    # every row that asks the same (building one costs more than the rest of a row's plan).
    wishes: dict[tuple[tuple[str, str], ...], Desired | None] = {}
    for row in sheet.rows:
        asked = tuple(row.values.items())
        if asked not in wishes:
            wishes[asked] = desired_from_row(row, sheet.keys, opts)
        desired = wishes[asked]
        node = by_name.get(row.node)
        if desired is None or node is None:
            current = node.labels if node is not None else None
            diffs.append(NodeDiff(row.node, row.line, desired, None, current))
            continue
        if opts.slinky is not None:
            desired = opts.slinky.add_to(desired, node.labels)
        plan = plan_labels(node, desired, adopt=opts.adopt)
        diffs.append(NodeDiff(row.node, row.line, desired, plan, node.labels))
    return BulkPlan(sheet.path, opts, tuple(diffs), by_name)


# --- formatting: one greppable line per change ---------------------------------------


def describe_diff(diff: NodeDiff, *, show_unchanged: bool = False) -> list[str]:
    """One CSV row's plan in the renderer every plan shares (``labeler.core.plan.describe``)."""
    if diff.missing:
        return [f"{diff.node}: missing (not in the cluster)"]
    if diff.plan is None or diff.current is None:
        return []
    return describe(diff.plan, diff.current, show_unchanged=show_unchanged)


# --- writing -------------------------------------------------------------------------


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
    written: bool = False
    patches: int = 0
    error: str | None = None


def execute(
    writer: LabelWriter,
    plan: BulkPlan,
    *,
    concurrency: int = 16,
    qps: float = 0.0,
    on_done: Callable[[NodeOutcome], None] | None = None,
) -> list[NodeOutcome]:
    """Patch every node whose plan changes something, ``concurrency`` at a time.

    ``writer`` re-plans from the node it is given, and on a 409 re-reads the node and plans
    again, so a concurrent edit is never overwritten blindly. An error on one node is
    recorded and the others go on; nothing is retried here beyond what the writer already
    does (429/5xx with backoff and Retry-After). Ctrl-C or SIGTERM: writes under way
    finish, no new one starts, and :class:`WritesInterrupted` carries what was written.
    """
    if plan.missing_error() is not None:
        raise AssertionError("execute() called with missing nodes; check missing_error first")
    todo = plan.to_change
    limiter = RateLimiter(qps)
    outcomes: list[NodeOutcome] = []

    def one(diff: NodeDiff) -> Steps[NodeOutcome]:
        node = plan.nodes[diff.node]
        assert diff.desired is not None and diff.current is not None
        wait = limiter.delay()
        if wait > 0:
            yield Pause(wait)
        try:
            result = yield from writer.steps(
                node, diff.desired, adopt=plan.options.adopt, plan=diff.plan
            )
        except Exception as exc:  # one node's failure must not stop the others
            if not isinstance(exc, KubeError):
                log.exception("unexpected error writing node=%s", diff.node)
            return NodeOutcome(diff.node, diff.plan, diff.current, error=str(exc) or repr(exc))
        patches = result.attempts if result.written else result.attempts - 1
        return NodeOutcome(diff.node, result.plan, diff.current, result.written, patches)

    def record(outcome: NodeOutcome) -> None:
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)

    width = max(1, min(concurrency, len(todo)))
    with StopOnSignal() as stop:
        run_many(writer.api, map(one, todo), width, record, stopping=stop.requested)
    if stop.exit_code:
        raise WritesInterrupted(outcomes, stop.exit_code)
    return outcomes


class StopOnSignal:
    """While writing, the first Ctrl-C or SIGTERM (kubectl delete of a Job's pod, systemd,
    a timeout) only asks the writes to stop: a write under way is never cut in the middle
    of its bookkeeping, and the report of what was written comes before exit 130/143. A
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


class WritesInterrupted(Exception):
    """``execute`` was stopped by a signal; ``outcomes`` are the writes that finished."""

    def __init__(self, outcomes: list[NodeOutcome], exit_code: int) -> None:
        super().__init__("interrupted")
        self.outcomes = outcomes
        self.exit_code = exit_code


@dataclass(frozen=True)
class BulkReport:
    """The end of an apply/delete: counts for the summary and the exit code."""

    plan: BulkPlan
    outcomes: tuple[NodeOutcome, ...]
    seconds: float
    interrupted: int = 0  # the exit code of the signal that stopped the writes, if one did

    @property
    def not_written(self) -> int:
        """Nodes with changes that were never attempted (the run was interrupted)."""
        return len(self.plan.to_change) - len(self.outcomes)

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
        return len(self.conflicted())

    @property
    def exit_code(self) -> int:
        """130/143 if interrupted, 1 if a node failed, 3 if conflicts were left, else 0."""
        if self.interrupted:
            return self.interrupted
        if self.failed:
            return Exit.ERROR
        return Exit.INCOMPLETE if self.conflicts else Exit.OK

    def summary(self) -> str:
        p = self.plan
        patches = sum(o.patches for o in self.outcomes)
        verb = "labeled" if p.options.action is Action.APPLY else "cleaned"
        return (
            f"{len(p.diffs)} node(s): {len(self.written)} {verb}, {len(p.unchanged)} unchanged, "
            f"{len(self.failed)} failed, {self.conflicts} with conflicts, "
            f"{len(p.missing)} missing, {len(p.skipped)} skipped"
            + (f", {self.not_written} not written (interrupted)" if self.interrupted else "")
            + f" ({patches} patches in {self.seconds:.1f}s)"
        )


# --- export --------------------------------------------------------------------------


@dataclass(frozen=True)
class Export:
    keys: tuple[str, ...]
    rows: tuple[tuple[str, Mapping[str, str]], ...]
    warnings: tuple[str, ...] = ()


def export_rows(nodes: Iterable[NodeLabels], profile: Profile) -> Export:
    """Today's labels of ``profile`` as CSV rows that ``apply`` accepts.

    Keys in profile order (tree label, levels widest first, extras); columns nobody has are
    left out; nodes with none of the keys are left out. A label with an empty value cannot
    be written in the CSV (an empty cell means "no label"), so it is left out with a warning.
    """
    keys = profile.all_keys
    rows: list[tuple[str, dict[str, str]]] = []
    warnings: list[str] = []
    for node in sorted(nodes, key=lambda n: n.name):
        values = {}
        for key in keys:
            value = node.labels.get(key)
            if value == "":
                warnings.append(
                    f"{node.name}: {key} has an empty value, which a CSV cell cannot express; "
                    "left out of the export"
                )
            elif value is not None:
                values[key] = value
        if values:
            rows.append((node.name, values))
    used = tuple(k for k in keys if any(k in v for _, v in rows))
    return Export(used, tuple(rows), tuple(warnings))


# --- against a cluster -----------------------------------------------------------------


def cluster_plan(api: Any, sheet: LabelSheet, opts: BulkOptions = BulkOptions()) -> BulkPlan:
    """One paginated LIST of the nodes, then the pure plan."""
    return plan_bulk(sheet, list_node_labels(api), opts)


def run(
    api: Any,
    plan: BulkPlan,
    *,
    concurrency: int = 16,
    qps: float = 0.0,
    on_done: Callable[[NodeOutcome], None] | None = None,
) -> BulkReport:
    """Write the plan (refusing missing nodes unless skipped) and report what happened."""
    err = plan.missing_error()
    if err is not None:
        raise err
    start = time.monotonic()
    try:
        outcomes = execute(
            LabelWriter(api), plan, concurrency=concurrency, qps=qps, on_done=on_done
        )
    except WritesInterrupted as e:
        return BulkReport(plan, tuple(e.outcomes), time.monotonic() - start, e.exit_code)
    return BulkReport(plan, tuple(outcomes), time.monotonic() - start)


def cluster_export(api: Any, profile: Profile, *, label_selector: str | None = None) -> Export:
    return export_rows(list_node_labels(api, label_selector=label_selector), profile)
