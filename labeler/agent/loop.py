"""The per-node agent (the DaemonSet): keep this node's topology labels right.

Data flows one way: source → outcome → ``desired_from_outcome`` (pure, decide.py) →
``plan_labels`` (pure) → one merge patch or nothing. One such step is reconcile.py; this
module runs the steps: its threads, and the HTTP endpoints around them (``serve``).

The running agent has three threads, so that no slow party blocks another:
- the *source* thread reads the source now and then every ``interval`` (± jitter), or
  sooner with backoff after an error;
- the *watch* thread watches only this node (field selector, no LIST) and passes every
  change on, so a hand-deleted label is back within a second;
- the *loop* (``run``) owns all state, reconciles on each message, and is the only writer.
Everything waits on one stop event, so SIGTERM ends the agent at once even while IMDS or
the API server hangs (the I/O threads are daemons and are simply abandoned). Every wait and
every reading of time goes through one clock (labeler.base.clock), which a test replaces
with one whose time moves only when the test says.

No thread may die or hang unnoticed while ``/healthz`` says 200 (health.py): each beats
while it makes progress; an unexpected exception in the source is a source error (logged,
counted, retried with backoff); one in the watch is logged, counted and the watch starts
again; one in the loop ends the process with exit 1. A thread that stops beating for
longer than its longest legitimate call fails ``/healthz`` by name.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labeler.agent.config import AgentConfig
from labeler.agent.decide import ReconcileResult, Status, unknown_levels
from labeler.agent.events import AgentEvents, short
from labeler.agent.health import Heartbeats
from labeler.agent.reconcile import Reconciler, error
from labeler.base.backoff import Backoff, Reconnect
from labeler.base.clock import SYSTEM_CLOCK, Clock
from labeler.base.errors import Exit
from labeler.base.logs import logger
from labeler.base.metrics import AgentMetrics
from labeler.core.node import NodeInfo
from labeler.kube.errors import Expired, KubeError, NotFound
from labeler.kube.events import NodeEvents
from labeler.kube.nodes import get_node, watch_nodes
from labeler.sources import NoData, Reading, Source, SourceError

log = logger(__name__)

API_MAX_BACKOFF = 60.0  # seconds: the longest wait between two tries of the API server


# What the source and watch threads tell the loop, through its queue.
@dataclass(frozen=True)
class NodeSeen:
    """The watch, or the GET that restarts it, saw this node."""

    node: NodeInfo


@dataclass(frozen=True)
class NodeDeleted:
    """The watch saw this node deleted."""


@dataclass(frozen=True)
class SourceRead:
    """The source was read. An error is not passed on: the last good outcome stays."""

    outcome: Reading | NoData


@dataclass(frozen=True)
class Stop:
    """``shutdown`` wakes the loop, which then sees the stop event."""


@dataclass(frozen=True)
class Retry:
    """Not queued: the loop's own wake-up when the last reconcile failed and its backoff
    has passed."""


Message = NodeSeen | NodeDeleted | SourceRead | Stop | Retry


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
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.api = api
        self.source = source
        self.config = config
        self.metrics = metrics
        self.stop = stop or threading.Event()
        self.events = AgentEvents(config.node, metrics, events, dry_run=config.dry_run)
        self.step = Reconciler(config, source, api, self.events, stop=self.stop, clock=clock)
        self._reread = threading.Event()  # a change is waiting for confirmation: read soon
        self._clock = clock
        self.heartbeats = Heartbeats(clock.monotonic)
        self._watch_rv = ""  # where the watch resumes; the newest resourceVersion seen
        # Waiting threads wake this often to beat: well inside the staleness bound.
        self._beat_every = min(5.0, config.stall_after / 4)
        self._queue: queue.Queue[Message] = queue.Queue()
        self._api_backoff = Backoff(config.api_backoff, API_MAX_BACKOFF)
        self._source_backoff = Backoff(config.error_backoff, config.interval)
        self._failures = 0  # reconciles failed in a row
        self._retry_at: float | None = None  # when to reconcile again after a failure
        self._threads: list[threading.Thread] = []  # the source and watch threads

    def shutdown(self) -> None:
        """Ask ``run`` to return; safe from a signal handler or another thread."""
        self.stop.set()
        self._queue.put(Stop())

    def join(self, timeout: float) -> bool:
        """Wait for the source and watch threads after :meth:`shutdown`; True when both
        ended. The watch ends at its next event (a BOOKMARK at the latest)."""
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    @property
    def ready(self) -> bool:
        return self.step.ready

    def health(self) -> tuple[bool, str]:
        """For ``/healthz``: every thread alive and making progress, or which is not."""
        return self.heartbeats.probe()

    def read_source(self) -> Reading | NoData:
        """Read the source once, counting the outcome. Raises SourceError."""
        return self.step.read_source()

    def reconcile(self, node: NodeInfo) -> ReconcileResult:
        """One reconcile step (reconcile.py). Never raises for API errors."""
        return self.step.reconcile(node)

    def once(self) -> ReconcileResult:
        """``--once``: read, GET the node, reconcile; errors become an error result."""
        try:
            self.step.accept(self.read_source(), confirm=False)  # --once writes what it reads
        except SourceError as e:
            return error(str(e))
        try:
            node = get_node(self.api, self.config.node, clock=self._clock)
        except NotFound:
            return error(self.step.not_found())
        except KubeError as e:
            return error(str(e))
        return self.reconcile(node)

    # --- the loop --------------------------------------------------------------------

    def run(self) -> None:
        """Reconcile until ``stop`` is set. Starts the source and watch threads."""
        cfg = self.config
        self.heartbeats.expect("loop", cfg.stall_after)
        try:
            self._run()
        except BaseException as e:
            self.heartbeats.died("loop", f"{type(e).__name__}: {short(e)}")
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
            retry_at = self._retry_at
            beat = self._beat_every
            timeout = (
                beat
                if retry_at is None
                else min(beat, max(0.0, retry_at - self._clock.monotonic()))
            )
            message: Message
            try:
                message = self._clock.take(self._queue, timeout)
            except queue.Empty:
                if retry_at is None or self._clock.monotonic() < retry_at:
                    continue
                message = Retry()  # the last reconcile failed: try again now
            latest_node: NodeInfo | None = None
            outcome_changed = False
            # Drain: a burst of watch events needs one reconcile, against the newest node.
            while True:
                match message:
                    case NodeSeen(node=seen):
                        latest_node = seen
                    case SourceRead(outcome=outcome):
                        if self.step.accept(outcome):
                            outcome_changed = True
                        else:  # a change waiting for confirmation: read again soon
                            self._reread.set()
                    case NodeDeleted():
                        self.step.node = None
                        latest_node = None
                try:
                    message = self._queue.get_nowait()
                except queue.Empty:
                    break
            if self.stop.is_set():
                break
            target = latest_node or self.step.node
            if target is None and (outcome_changed or latest_node is None):
                target = self._get_node_until_ok("loop")
            if target is not None:
                self._reconcile_and_schedule(target)

    def _reconcile_and_schedule(self, node: NodeInfo) -> None:
        """Reconcile, and after an error schedule a retry with backoff: without it, a write
        that failed (API down longer than ``call`` retries) would wait for the next source
        read, up to ``interval`` later, with the node's labels wrong meanwhile."""
        result = self.reconcile(node)
        self.events.result(result)
        if result.status == Status.ERROR:
            self._failures += 1
            self._retry_at = self._clock.monotonic() + self._api_backoff.delay(self._failures)
        else:
            self._failures, self._retry_at = 0, None

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
                        short(e),
                        delay,
                    )
                    log.debug("thread failure thread=%s", name, exc_info=True)
                    self.heartbeats.beat(name)
                    if self._clock.wait(self.stop, delay):
                        break
                except BaseException as e:  # not recoverable here: /healthz fails
                    self.heartbeats.died(name, f"{type(e).__name__}: {short(e)}")
                    self.metrics.thread_errors.labels(name).inc()
                    raise
            self.heartbeats.forget(name)

        thread = threading.Thread(target=supervised, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

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
                if unknown_levels(cfg.profile, read, self.step.keys):
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
                self._queue.put(SourceRead(outcome))
            self._wait("source", delay, sooner=self._reread)

    def _wait(self, name: str, seconds: float, *, sooner: threading.Event | None = None) -> bool:
        """Wait on ``stop`` for ``seconds``, beating as ``name`` meanwhile (a wait between
        reads is progress, however long the interval); True if stop was set. ``sooner``, once
        set (a change waiting for confirmation), shortens the wait to the error backoff, so a
        real change is read again and written soon; it is looked at every half second."""
        end = self._clock.monotonic() + seconds
        step = min(self._beat_every, 0.5) if sooner is not None else self._beat_every
        while True:
            self.heartbeats.beat(name)
            if sooner is not None and sooner.is_set():
                sooner.clear()
                end = min(end, self._clock.monotonic() + self.config.error_backoff)
            left = end - self._clock.monotonic()
            if left <= 0:
                return self.stop.is_set()
            if self._clock.wait(self.stop, min(left, step)):
                return True

    def _watch_loop(self) -> None:
        cfg = self.config
        selector = f"metadata.name={cfg.node}"
        reconnect = Reconnect(self._api_backoff, clock=self._clock.monotonic)
        while not self.stop.is_set():
            self.heartbeats.beat("watch")
            rv = self._watch_rv
            try:
                for kind, node in watch_nodes(
                    self.api,
                    resource_version=rv,
                    field_selector=selector,
                    timeout_seconds=cfg.watch_timeout,
                    opened=reconnect.opened,
                ):
                    reconnect.delivered()
                    self.heartbeats.beat("watch")
                    if node.resource_version:
                        self._watch_rv = node.resource_version
                    if kind in ("ADDED", "MODIFIED"):
                        self._queue.put(NodeSeen(node))
                    elif kind == "DELETED":
                        log.warning("node deleted node=%s", cfg.node)
                        self._queue.put(NodeDeleted())
                    if self.stop.is_set():
                        return
                reconnect.ended()
                continue
            except Expired as e:
                # The server answered: only the events since rv are gone. Not a failure in a
                # row, so no wait: the fresh GET below starts again, as a re-list would.
                log.info("watch expired node=%s error=%s; reading the node again", cfg.node, e)
                delay = 0.0
            except KubeError as e:
                if self.stop.is_set():
                    return
                delay = reconnect.failed()
                log.info("watch ended node=%s error=%s retry_in=%.1fs", cfg.node, e, delay)
            # Outside the handler, so the re-read's errors are its own, not the watch's.
            if self._wait("watch", delay):
                return
            # The events since rv may be gone (410) or missed: start from a fresh GET.
            node_now = self._get_node_until_ok("watch")
            if node_now is None:
                return
            self._watch_rv = node_now.resource_version
            self._queue.put(NodeSeen(node_now))

    def _get_node_until_ok(self, thread: str) -> NodeInfo | None:
        """GET this node, retrying with backoff until it works or stop is set."""
        failures = 0
        while not self.stop.is_set():
            # Waiting for the API server is not a stall: keep /healthz green meanwhile,
            # a restart would not bring the server back.
            self.heartbeats.beat(thread)
            try:
                return get_node(self.api, self.config.node, clock=self._clock)
            except KubeError as e:
                failures += 1
                delay = self._api_backoff.delay(failures)
                message = self.step.not_found() if isinstance(e, NotFound) else str(e)
                log.error(
                    "cannot read node node=%s retry_in=%.1fs error=%s",
                    self.config.node,
                    delay,
                    message,
                )
                self._wait(thread, delay)
        return None


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
