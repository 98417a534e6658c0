"""The per-node agent (the DaemonSet): keep this node's topology labels right.

Data flows one way: source → outcome → ``desired_from_outcome`` (pure, decide.py) →
``plan_labels`` (pure) → one merge patch or nothing.

The running agent has three threads, so that no slow party blocks another:
- the *source* thread reads the source now and then every ``interval`` (± jitter), or
  sooner with backoff after an error;
- the *watch* thread watches only this node (field selector, no LIST) and passes every
  change on, so a hand-deleted label is back within a second;
- the *loop* (``run``) owns all state, reconciles on each message, and is the only writer.
Everything waits on one stop event, so SIGTERM ends the agent at once even while IMDS or
the API server hangs (the I/O threads are daemons and are simply abandoned).

No thread may die or hang unnoticed while ``/healthz`` says 200 (health.py): each beats
while it makes progress; an unexpected exception in the source is a source error (logged,
counted, retried with backoff); one in the watch is logged, counted and the watch starts
again; one in the loop ends the process with exit 1. A thread that stops beating for
longer than its longest legitimate call fails ``/healthz`` by name.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from labeler.agent.confirm import Confirmation, Signature, recorded_signature, signature
from labeler.agent.decide import (
    OnMissing,
    ReconcileResult,
    Status,
    desired_from_outcome,
    node_is_labeled,
    unknown_levels,
)
from labeler.agent.health import Heartbeats
from labeler.base.backoff import Backoff
from labeler.base.errors import Exit, LabelerError
from labeler.base.metrics import AgentMetrics
from labeler.core.labels import Encoding
from labeler.core.node import NodeInfo
from labeler.core.plan import Conflict, Desired, change_lines, describe
from labeler.core.profiles import Profile
from labeler.kube import readiness
from labeler.kube.errors import KubeError, NotFound
from labeler.kube.events import NodeEvents
from labeler.kube.nodes import LabelWriter, get_node, watch_nodes
from labeler.sources import NoData, Reading, Source, SourceError

if TYPE_CHECKING:
    from labeler.core.slinky import Slinky

log = logging.getLogger(__name__)

API_MAX_BACKOFF = 60.0  # seconds: the longest wait between two tries of the API server


@dataclass(frozen=True)
class AgentConfig:
    node: str
    profile: Profile
    encoding: Encoding
    on_missing: OnMissing = OnMissing.SKIP
    adopt: bool = False
    dry_run: bool = False
    interval: float = 600.0
    jitter: float = 0.1
    error_backoff: float = 10.0  # first retry after a source error; doubles up to interval
    api_backoff: float = 1.0  # first retry after an API error; doubles up to 60 s
    watch_timeout: int = 300
    min_write_interval: float = 1.0  # never more than one patch a second, even in a fight
    # The longest one blocking call (a source read, an API request) may take before its
    # thread counts as stuck; the watch may also wait a whole watch request for an event.
    stall_after: float = 300.0
    confirm_reads: int = 2  # reads in a row that must agree before a topology change is written
    remove_taint: str | None = None  # readiness gate: this NoSchedule taint goes once labeled
    set_condition: bool = False  # readiness gate: keep the TopologyLabeled condition
    slinky: Slinky | None = None  # also keep the Slinky topology annotation


@dataclass
class _State:
    outcome: Reading | NoData | None = None
    node: NodeInfo | None = None
    conflicts: frozenset[tuple[str, str, str | None]] = frozenset()
    last_write: float = float("-inf")
    ready: bool = False
    labeled: bool = False  # every level label present and current, at the last reconcile
    condition: tuple[str, str] | None = None  # (status, reason) this process last set
    failures: int = 0  # reconciles failed in a row
    retry_at: float | None = None  # when to reconcile again after a failure


# --- the agent ----------------------------------------------------------------------------


class Agent:
    """Reconciles one node. ``once()`` for ``--once``; ``run()`` until ``stop`` is set."""

    def __init__(
        self,
        api: Any,
        source: Source,
        config: AgentConfig,
        *,
        metrics: AgentMetrics,
        events: NodeEvents | None = None,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.source = source
        self.config = config
        self.metrics = metrics
        self.events = events
        self.stop = stop or threading.Event()
        self.writer = LabelWriter(api)
        # Which label key each role the source reports is written to: the agent's scope.
        self.keys = config.profile.keys_for(source.roles)
        self._level_roles = tuple(r for r in source.roles.levels if r in self.keys)
        self._confirmation = Confirmation(config.confirm_reads)
        self._applied: Signature | None = None  # what the labels were last written from
        self._reread = threading.Event()  # a change is waiting for confirmation: read soon
        self._clock = clock
        self._state = _State()
        self.heartbeats = Heartbeats(clock)
        self._watch_rv = ""  # where the watch resumes; the newest resourceVersion seen
        # Waiting threads wake this often to beat: well inside the staleness bound.
        self._beat_every = min(5.0, config.stall_after / 4)
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._api_backoff = Backoff(config.api_backoff, API_MAX_BACKOFF)
        self._source_backoff = Backoff(config.error_backoff, config.interval)

    def shutdown(self) -> None:
        """Ask ``run`` to return; safe from a signal handler or another thread."""
        self.stop.set()
        self._queue.put(("stop", None))

    # --- health ---------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self._state.ready

    def health(self) -> tuple[bool, str]:
        """For ``/healthz``: every thread alive and making progress, or which is not."""
        return self.heartbeats.probe()

    # --- one step ---------------------------------------------------------------------

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
                raise SourceError(f"unexpected {type(e).__name__}: {_short(e)}") from e
        except SourceError as e:
            self.metrics.source_reads.labels(name, "error").inc()
            self._event("Warning", "TopologySourceUnavailable", f"{name}: {e}")
            raise
        finally:
            self.metrics.source_read_duration.labels(name).observe(time.perf_counter() - start)
        result = "reading" if isinstance(outcome, Reading) else "no_data"
        self.metrics.source_reads.labels(name, result).inc()
        return outcome

    def reconcile(self, node: NodeInfo) -> ReconcileResult:
        """Bring ``node`` to the last good outcome, then open the readiness gate if asked
        and due. Never raises for API errors."""
        result = self._reconcile(node)
        cfg = self.config
        if (cfg.remove_taint or cfg.set_condition) and not cfg.dry_run:
            self._gate(node, result)
        return result

    def _gate(self, node: NodeInfo, result: ReconcileResult) -> None:
        """The readiness gate. A transient state (an error, no outcome yet) changes nothing;
        the taint is only ever removed, never added back."""
        if result.status in (Status.ERROR, Status.WAITING):
            return
        cfg = self.config
        ready = self._state.labeled and result.status != Status.INCOMPLETE
        try:
            if ready and cfg.remove_taint:
                for index, taint in enumerate(node.taints):
                    if taint.key == cfg.remove_taint and taint.effect == "NoSchedule":
                        readiness.remove_taint(self.api, cfg.node, index, taint)
                        self._event("Normal", "TopologyTaintRemoved", f"removed taint {taint}")
                        break
            if cfg.set_condition:
                wanted = _condition(ready, result)
                if (wanted[0], wanted[1]) != self._state.condition:
                    previous = self._state.condition
                    transition = previous is None or previous[0] != wanted[0]
                    readiness.set_condition(self.api, cfg.node, *wanted, transition=transition)
                    self._state.condition = (wanted[0], wanted[1])
        except KubeError as e:
            # A taint list changed under us (the patch's test failed) or the API is down:
            # the watch brings the node again and the next reconcile retries.
            log.warning("readiness gate not updated node=%s error=%s", cfg.node, e)

    def _reconcile(self, node: NodeInfo) -> ReconcileResult:
        cfg = self.config
        state = self._state
        state.node = node
        if node.uid and self.events is not None:
            self.events.uid = node.uid
        if state.outcome is None:
            return ReconcileResult(Status.WAITING, "no source outcome yet")
        try:
            desired = desired_from_outcome(
                cfg.profile,
                state.outcome,
                cfg.encoding,
                cfg.node,
                cfg.on_missing,
                keys=self.keys,
            )
        except LabelerError as e:
            return self._error(f"cannot encode the topology of {cfg.node}: {e}")
        if desired is not None and cfg.slinky is not None:
            desired = cfg.slinky.add_to(desired, node.labels)
        if desired is None:
            reason = state.outcome.reason if isinstance(state.outcome, NoData) else ""
            self._done(node.labels, None, conflicts=())
            text = f"{cfg.node}: no topology data ({reason}); nothing to write"
            return ReconcileResult(Status.NO_DATA, reason, text=text)
        self._pace()
        try:
            result = self.writer.write(node, desired, adopt=cfg.adopt, dry_run=cfg.dry_run)
        except KubeError as e:
            self.metrics.label_writes.labels("error").inc()
            return self._error(f"cannot write the labels of node {cfg.node}: {e}")
        plan = result.plan
        lines = describe(plan, node.labels, source_ids=desired.source_ids, show_unchanged=True)
        text = "\n".join(lines)
        if result.written:
            state.last_write = self._clock()
            state.node = None  # stale now; the watch brings the new version
            self.metrics.label_writes.labels("success").inc()
            changes = "; ".join(change_lines(replace(plan, conflicts=()), node.labels))
            if changes:
                self._event("Normal", "TopologyLabelsUpdated", f"labels updated: {changes}")
        final = {**node.labels, **plan.labels} if result.written else dict(node.labels)
        final = {k: v for k, v in final.items() if v is not None}
        self._done(final, desired, conflicts=plan.conflicts)
        if plan.conflicts:
            return ReconcileResult(
                Status.CONFLICT,
                "; ".join(str(c) for c in plan.conflicts),
                plan,
                result.written,
                text,
            )
        missing = unknown_levels(cfg.profile, state.outcome, self.keys)
        if missing:
            return ReconcileResult(Status.INCOMPLETE, missing, plan, result.written, text)
        status = Status.LABELED if isinstance(state.outcome, Reading) else Status.NO_DATA
        return ReconcileResult(status, "", plan, result.written, text)

    def once(self) -> ReconcileResult:
        """``--once``: read, GET the node, reconcile; errors become an error result."""
        try:
            self._state.outcome = self.read_source()
        except SourceError as e:
            return self._error(str(e))
        try:
            node = get_node(self.api, self.config.node)
        except NotFound:
            return self._error(self._not_found())
        except KubeError as e:
            return self._error(str(e))
        return self.reconcile(node)

    # --- the loop --------------------------------------------------------------------

    def run(self) -> None:
        """Reconcile until ``stop`` is set. Starts the source and watch threads."""
        cfg = self.config
        self.heartbeats.expect("loop", cfg.stall_after)
        try:
            self._run()
        except BaseException as e:
            self.heartbeats.died("loop", f"{type(e).__name__}: {_short(e)}")
            self.metrics.thread_errors.labels("loop").inc()
            raise
        self.heartbeats.forget("loop")

    def _run(self) -> None:
        cfg = self.config
        self._start("source", self._source_loop, cfg.stall_after)
        node = self._get_node_until_ok("loop")
        if node is None:
            return
        self._watch_rv = node.resource_version
        # A quiet node sends no event for a whole watch request (plus the client's margin).
        self._start("watch", self._watch_loop, cfg.watch_timeout + 30 + cfg.stall_after)
        self._reconcile_and_schedule(node)
        while not self.stop.is_set():
            self.heartbeats.beat("loop")
            retry_at = self._state.retry_at
            beat = self._beat_every
            timeout = beat if retry_at is None else min(beat, max(0.0, retry_at - self._clock()))
            try:
                kind, item = self._queue.get(timeout=timeout)
            except queue.Empty:
                if retry_at is None or self._clock() < retry_at:
                    continue
                kind, item = "retry", None  # the last reconcile failed: try again now
            latest_node: NodeInfo | None = None
            outcome_changed = False
            # Drain: a burst of watch events needs one reconcile, against the newest node.
            while True:
                if kind == "node":
                    latest_node = item
                elif kind == "outcome" and self._confirmed(item):
                    outcome_changed = True
                    self._state.outcome = item
                elif kind == "deleted":
                    self._state.node = None
                    latest_node = None
                try:
                    kind, item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if self.stop.is_set():
                break
            target = latest_node or self._state.node
            if target is None and (outcome_changed or latest_node is None):
                target = self._get_node_until_ok("loop")
            if target is not None:
                self._reconcile_and_schedule(target)

    def _reconcile_and_schedule(self, node: NodeInfo) -> None:
        """Reconcile, and after an error schedule a retry with backoff: without it, a write
        that failed (API down longer than ``call`` retries) would wait for the next source
        read, up to ``interval`` later, with the node's labels wrong meanwhile."""
        result = self.reconcile(node)
        self._log(result)
        state = self._state
        if result.status == Status.ERROR:
            state.failures += 1
            state.retry_at = self._clock() + self._api_backoff.delay(state.failures)
        else:
            state.failures, state.retry_at = 0, None

    def _start(self, name: str, target: Callable[[], None], max_age: float) -> None:
        """Run ``target`` in a daemon thread that beats as ``name``; if it raises, log and
        count it and start it again after a backoff, so no thread is lost while the
        process looks healthy. (The source loop turns errors into source errors itself;
        this is the net for a bug anywhere else in a thread.)"""
        self.heartbeats.expect(name, max_age)

        def supervised() -> None:
            failures = 0
            while not self.stop.is_set():
                try:
                    target()
                    break
                except Exception as e:
                    failures += 1
                    self.metrics.thread_errors.labels(name).inc()
                    delay = self._api_backoff.delay(failures)
                    log.error(
                        "thread failed thread=%s error=%s: %s restart_in=%.1fs",
                        name,
                        type(e).__name__,
                        _short(e),
                        delay,
                    )
                    log.debug("thread failure thread=%s", name, exc_info=True)
                    self.heartbeats.beat(name)
                    if self.stop.wait(delay):
                        break
                except BaseException as e:  # not recoverable here: /healthz fails
                    self.heartbeats.died(name, f"{type(e).__name__}: {_short(e)}")
                    self.metrics.thread_errors.labels(name).inc()
                    raise
            self.heartbeats.forget(name)

        threading.Thread(target=supervised, name=name, daemon=True).start()

    def _confirmed(self, outcome: Reading | NoData) -> bool:
        """Whether a new outcome may be acted on now (confirm.py). No data never needs
        confirming: it writes nothing, or (isolate) fills only absent levels."""
        if not isinstance(outcome, Reading):
            return True
        candidate = signature(outcome, self._level_roles)
        baseline = self._applied
        node = self._state.node
        if baseline is None and node is not None:
            baseline = recorded_signature(node.source_ids, self.keys, self._level_roles)
        if self._confirmation.offer(baseline, candidate):
            self._applied = candidate
            return True
        self.metrics.unconfirmed_reads.labels(self.source.name).inc()
        log.warning(
            "topology change held back until confirmed node=%s source=%s reads=%d/%d document=%s",
            self.config.node,
            self.source.name,
            self._confirmation.pending,
            self._confirmation.needed,
            outcome.details.get("document", ""),
        )
        self._reread.set()
        return False

    def _source_loop(self) -> None:
        cfg = self.config
        failures = 0
        while not self.stop.is_set():
            self.heartbeats.beat("source")
            try:
                read = self.read_source()
                outcome: Reading | NoData | SourceError = read
                failures = 0
                delay = cfg.interval * (1 + random.uniform(-cfg.jitter, cfg.jitter))
                if unknown_levels(cfg.profile, read, self.keys):
                    # What is known gets written; the rest is worth asking again soon.
                    delay = min(delay, self._source_backoff.delay(1))
            except SourceError as e:
                outcome = e
                failures += 1
                delay = self._source_backoff.delay(failures)
                log.warning(
                    "source read failed source=%s failures=%d next_try=%.0fs error=%s",
                    self.source.name,
                    failures,
                    delay,
                    e,
                )
            if not isinstance(outcome, SourceError):
                # An error is not passed on: the last good outcome (and labels) stay.
                self._queue.put(("outcome", outcome))
            self._wait("source", delay, sooner=self._reread)

    def _wait(self, name: str, seconds: float, *, sooner: threading.Event | None = None) -> bool:
        """Wait on ``stop`` for ``seconds``, beating as ``name`` meanwhile (a wait between
        reads is progress, however long the interval); True if stop was set. ``sooner``, once
        set (a change waiting for confirmation), shortens the wait to the error backoff, so a
        real change is read again and written soon; it is looked at every half second."""
        end = self._clock() + seconds
        step = min(self._beat_every, 0.5) if sooner is not None else self._beat_every
        while True:
            self.heartbeats.beat(name)
            if sooner is not None and sooner.is_set():
                sooner.clear()
                end = min(end, self._clock() + self.config.error_backoff)
            left = end - self._clock()
            if left <= 0:
                return self.stop.is_set()
            if self.stop.wait(min(left, step)):
                return True

    def _watch_loop(self) -> None:
        cfg = self.config
        selector = f"metadata.name={cfg.node}"
        failures = 0
        while not self.stop.is_set():
            self.heartbeats.beat("watch")
            rv = self._watch_rv
            try:
                for kind, node in watch_nodes(
                    self.api,
                    resource_version=rv,
                    field_selector=selector,
                    timeout_seconds=cfg.watch_timeout,
                ):
                    failures = 0
                    self.heartbeats.beat("watch")
                    if node.resource_version:
                        self._watch_rv = node.resource_version
                    if kind in ("ADDED", "MODIFIED"):
                        self._queue.put(("node", node))
                    elif kind == "DELETED":
                        log.warning("node deleted node=%s", cfg.node)
                        self._queue.put(("deleted", None))
                    if self.stop.is_set():
                        return
            except KubeError as e:
                if self.stop.is_set():
                    return
                failures += 1
                delay = self._api_backoff.delay(failures)
                log.info("watch ended node=%s error=%s retry_in=%.1fs", cfg.node, e, delay)
                if self._wait("watch", delay):
                    return
                # The events since rv may be gone (410) or missed: start from a fresh GET.
                node_now = self._get_node_until_ok("watch")
                if node_now is None:
                    return
                self._watch_rv = node_now.resource_version
                self._queue.put(("node", node_now))

    def _get_node_until_ok(self, thread: str) -> NodeInfo | None:
        """GET this node, retrying with backoff until it works or stop is set."""
        failures = 0
        while not self.stop.is_set():
            # Waiting for the API server is not a stall: keep /healthz green meanwhile,
            # a restart would not bring the server back.
            self.heartbeats.beat(thread)
            try:
                return get_node(self.api, self.config.node)
            except KubeError as e:
                failures += 1
                delay = self._api_backoff.delay(failures)
                message = self._not_found() if isinstance(e, NotFound) else str(e)
                log.error(
                    "cannot read node node=%s retry_in=%.1fs error=%s",
                    self.config.node,
                    delay,
                    message,
                )
                self._wait(thread, delay)
        return None

    # --- helpers -----------------------------------------------------------------------

    def _pace(self) -> None:
        wait = self._state.last_write + self.config.min_write_interval - self._clock()
        if wait > 0:
            self.stop.wait(wait)

    def _done(
        self, labels: Mapping[str, str], desired: Desired | None, *, conflicts: tuple[Conflict, ...]
    ) -> None:
        state = self._state
        labeled = node_is_labeled(self.config.profile, labels, desired)
        state.labeled = labeled
        self.metrics.node_labeled.set(1 if labeled and not conflicts else 0)
        self.metrics.last_success.set(time.time())
        seen = frozenset((c.key, c.current, c.wanted) for c in conflicts)
        new = [c for c in conflicts if (c.key, c.current, c.wanted) not in state.conflicts]
        if new:
            self.metrics.label_conflicts.inc(len(new))
            self._event("Warning", "TopologyLabelConflict", "; ".join(str(c) for c in new))
        state.conflicts = seen
        if not self.config.dry_run:
            state.ready = True

    def _error(self, message: str) -> ReconcileResult:
        return ReconcileResult(Status.ERROR, message)

    def _event(self, event_type: str, reason: str, message: str) -> None:
        if self.events is not None and not self.config.dry_run:
            self.events.emit(event_type, reason, message)

    def _not_found(self) -> str:
        return (
            f"node {self.config.node!r} does not exist; set --node-name or NODE_NAME "
            "(the DaemonSet passes spec.nodeName through the downward API)"
        )

    def _log(self, result: ReconcileResult) -> None:
        node = self.config.node
        if result.status == Status.ERROR:
            log.error("reconcile failed node=%s error=%s", node, result.message)
        elif result.status == Status.CONFLICT:
            log.warning("label conflict node=%s %s", node, result.message)
        elif result.status == Status.NO_DATA:
            log.info("no topology data node=%s reason=%s", node, result.message)
        elif result.written:
            log.info("labels reconciled node=%s written=true", node)
        else:
            log.debug("labels current node=%s status=%s", node, result.status)


def _short(e: BaseException, limit: int = 200) -> str:
    """An exception's message on one bounded line (a RecursionError's can be long)."""
    text = " ".join(str(e).split()) or repr(e)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _condition(ready: bool, result: ReconcileResult) -> tuple[str, str, str]:
    """(status, reason, message) of the TopologyLabeled condition."""
    if ready:
        return "True", "Labeled", "every topology level label is on the node"
    reasons = {
        Status.NO_DATA: "NoTopologyData",
        Status.INCOMPLETE: "TopologyIncomplete",
        Status.CONFLICT: "LabelConflict",
    }
    reason = reasons.get(result.status, "NotLabeled")
    return "False", reason, result.message or "a topology level label is missing"


def serve(agent: Agent, *, port: int, address: str = "") -> int:
    """Run the agent with its HTTP endpoints until SIGTERM/SIGINT; 0 on a clean stop."""
    from labeler.base.http import ProbeServer, flag_probe, serve_until_signal

    server = ProbeServer(
        agent.metrics.registry,
        healthz=agent.health,
        readyz=flag_probe(lambda: agent.ready, "not reconciled yet"),
        port=port,
        address=address,
    )
    failed = threading.Event()

    def loop() -> None:
        try:
            agent.run()
        except Exception:
            log.exception("agent loop crashed node=%s", agent.config.node)
            failed.set()
            agent.stop.set()

    thread = threading.Thread(target=loop, name="agent", daemon=True)
    thread.start()
    serve_until_signal(server, agent.stop, on_signal=agent.shutdown)
    thread.join(1.0)  # a write in flight may finish; a hung call is abandoned
    return Exit.ERROR if failed.is_set() else Exit.OK
