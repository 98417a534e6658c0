"""Many pieces of API work (labeler.kube.steps) at once, from one thread.

Why: bulk apply writes 10,000 nodes, 16 requests in flight. With a thread per request in
flight, every answer wakes a thread that must then take the interpreter lock from the
others: at 10,000 patches that was ~15 futex calls per patch and most of the process's
CPU. Here one thread keeps ``width`` keep-alive connections, writes each request with one
``send`` and reads answers as the sockets become readable (one ``epoll`` wait serves every
answer that arrived meanwhile), so a patch costs about one send and one receive.

The connections are opened by the same urllib3 pool as every other request (TCP, TLS,
CA, client certificate, hostname check: see labeler.kube.wire) and then used non-blocking;
answers are parsed by the same reader as the blocking path (``answer.read_answer``). A
request in flight on a kept connection the server had just closed is sent again on a new
one only when that is safe (GET, or a write marked repeatable), as ``Wire.send`` does.
A kept connection is looked at before each reuse (``wire.Idle``); every request
has a deadline for its whole answer (the read timeout); success is a 2xx status; an answer
that must hold a named object holds that one.

Whatever one reply does, the loop goes on: any exception from a connection or from the
reader fails that request alone (its task's retries decide), and the other tasks go on.
Once ``stopping()``: no task starts, a task waiting to retry is ended with
:class:`~labeler.kube.errors.Interrupted`, and requests in flight get at most
:data:`STOP_GRACE` more seconds, so a run ends soon after a signal whatever the server does.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import queue
import selectors
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from labeler.kube import steps
from labeler.kube.answer import Answer, Reader, body_limit, check_object, read_answer
from labeler.kube.errors import ApiStatus, Interrupted
from labeler.kube.steps import Call, Pause, Steps
from labeler.kube.wire import GONE, SAFE_METHODS, Idle, Wire, read_timeout

if TYPE_CHECKING:
    from labeler.kube.client import Api

log = logging.getLogger(__name__)
T = TypeVar("T")
_TICK = 0.1  # the longest wait without looking at ``stopping()`` and the deadlines
_WANT = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
_READS = 64  # receives per wake-up on one TLS connection (decrypted bytes may be pending)
STOP_GRACE = 10.0  # seconds a request in flight may still take once the run is stopping


def stopped_in_flight() -> Interrupted:
    return Interrupted(
        "stopped by a signal before the API server answered: this node may or may not have "
        "the new labels; run the same command again (it writes only what still differs)"
    )


def stopped_before_retry() -> Interrupted:
    return Interrupted(
        "stopped by a signal while waiting to retry; run the same command again (it writes "
        "only what still differs)"
    )


class _Slot:
    """One connection, and the request on it (if any)."""

    __slots__ = (
        "again",
        "call",
        "conn",
        "deadline",
        "got",
        "idle",
        "out",
        "reader",
        "reused",
        "sock",
        "task",
        "want",
        "writing",
    )

    def __init__(self, conn: Any) -> None:
        self.conn = conn  # the urllib3 connection that opened the socket (kept alive with it)
        self.sock = conn.sock
        self.sock.setblocking(False)
        self.idle = Idle(self.sock)
        self.task: Steps[Any] | None = None
        self.call: Call | None = None
        self.out = b""  # request bytes not yet sent
        self.reader: Reader[Answer] | None = None
        self.want = 0
        self.got = 0
        self.deadline = 0.0
        self.reused = False
        self.again = False
        self.writing = False


class Mux:
    """Run step generators, at most ``width`` at a time, on ``width`` connections."""

    def __init__(self, wire: Wire, width: int) -> None:
        self.wire = wire
        self.width = max(1, width)
        self._sel = selectors.DefaultSelector()
        self._free: list[_Slot] = []
        self._busy: set[_Slot] = set()
        self._timers: list[tuple[float, int, Steps[Any]]] = []
        self._seq = itertools.count()
        self._active = 0
        self._check = 0.0  # when the read deadlines are next looked at
        self._stop_at: float | None = None  # once stopping: the end of the grace
        self._done: Callable[[Any], None] = lambda _: None

    def run(
        self,
        tasks: Iterator[Steps[T]],
        done: Callable[[T], None],
        *,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        """Carry out every task (a new one starts as one ends), calling ``done`` with each
        one's result in this thread. Once ``stopping()`` is true no new task starts; those
        under way finish within :data:`STOP_GRACE`. A task should not raise (it turns its
        own errors into a result); one that does is logged and has no result."""
        self._done = done
        try:
            self._open_first()
            while True:
                if self._stop_at is None and stopping():
                    self._stop()
                while self._active < self.width and self._stop_at is None:
                    task = next(tasks, None)
                    if task is None:
                        break
                    self._active += 1
                    self._advance(task, None, None)
                if not self._active:
                    return
                self._wait()
        finally:
            self._close()

    # --- the loop --------------------------------------------------------------------

    def _wait(self) -> None:
        now = time.monotonic()
        until = now + _TICK  # read deadlines are looked at at least this often
        if self._timers:
            until = min(until, self._timers[0][0])
        for key, events in self._sel.select(max(0.0, until - now)):
            slot = key.data
            if slot.task is None:
                self._drop(slot)  # an idle connection is readable: the server closed it
            elif events & selectors.EVENT_WRITE and slot.out:
                self._write(slot)
            else:
                self._read(slot)
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, task = heapq.heappop(self._timers)
            self._advance(task, None, None)
        if now >= self._check:
            self._check = now + _TICK
            for slot in [s for s in self._busy if s.deadline <= now]:
                late = self._stop_at is not None and now >= self._stop_at
                error = stopped_in_flight() if late else read_timeout(self.wire.timeout[1])
                self._fail(slot, error)

    def _stop(self) -> None:
        """Stopping: requests in flight get at most STOP_GRACE more; waits for a retry end."""
        self._stop_at = time.monotonic() + STOP_GRACE
        for slot in self._busy:
            slot.deadline = min(slot.deadline, self._stop_at)
        paused, self._timers = self._timers, []
        for _, _, task in paused:
            self._advance(task, None, stopped_before_retry())

    def _advance(self, task: Steps[Any], answer: Any, error: BaseException | None) -> None:
        """Give ``task`` what it waited for; start what it asks for next."""
        while True:
            try:
                step = task.throw(error) if error is not None else task.send(answer)
            except StopIteration as end:
                self._active -= 1
                self._done(end.value)
                return
            except Exception:  # a task's own bug: it alone is lost, the others go on
                log.exception("a write task failed")
                self._active -= 1
                return
            answer, error = None, None
            if isinstance(step, Pause):
                if self._stop_at is not None:
                    error = stopped_before_retry()
                    continue
                due = time.monotonic() + step.seconds
                heapq.heappush(self._timers, (due, next(self._seq), task))
                return
            if self._stop_at is not None and time.monotonic() >= self._stop_at:
                error = stopped_in_flight()
                continue
            try:
                slot = self._take()
            except Exception as exc:  # no connection: the task's retries decide
                error = exc
                continue
            slot.task, slot.call = task, step
            slot.again = step.repeatable or step.method in SAFE_METHODS
            self._begin(slot)
            return

    # --- one request on one connection --------------------------------------------

    def _begin(self, slot: _Slot) -> None:
        call = slot.call
        assert call is not None
        self._busy.add(slot)
        try:
            slot.out = self.wire.request_bytes(
                call.method, call.path, call.body, call.content_type, call.accept
            )
            slot.reader = read_answer(call.method, call.echo, body_limit(call.name))
            slot.want = next(slot.reader)
        except Exception as exc:
            self._fail(slot, exc)
            return
        slot.got = 0
        now = time.monotonic()
        slot.deadline = now + self.wire.timeout[1]
        if self._stop_at is not None:
            slot.deadline = min(slot.deadline, self._stop_at)
        self._write(slot)

    def _write(self, slot: _Slot) -> None:
        try:
            sent = slot.sock.send(slot.out)
        except _WANT:
            sent = 0
        except Exception as exc:
            self._fail(slot, exc)
            return
        slot.out = slot.out[sent:]
        writing = bool(slot.out)
        if writing != slot.writing:  # wait for room to send the rest (rare: small requests)
            slot.writing = writing
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if writing else 0)
            try:
                self._sel.modify(slot.sock, mask, slot)
            except Exception as exc:
                self._fail(slot, exc)

    def _read(self, slot: _Slot) -> None:
        reader = slot.reader
        assert reader is not None
        for _ in range(_READS):
            try:
                data = slot.sock.recv(slot.want)
            except _WANT:
                return
            except Exception as exc:  # not only OSError: nothing from a socket may escape
                self._fail(slot, exc)
                return
            slot.got += len(data)
            try:
                slot.want = reader.send(data)
            except StopIteration as end:
                self._finish(slot, end.value)
                return
            except Exception as exc:
                self._fail(slot, exc)
                return
            # TLS may hold decrypted bytes that no readiness event announces.
            if not data or not isinstance(slot.sock, ssl.SSLSocket) or not slot.sock.pending():
                return

    def _finish(self, slot: _Slot, answer: Answer) -> None:
        status, reason, headers, body, keep = answer
        call = slot.call
        assert call is not None
        if call.name and 200 <= status < 300:
            try:
                check_object(body, call.name)
            except Exception as exc:
                self._fail(slot, exc)  # out of step: the connection is dropped
                return
        task = self._release(slot)
        if keep:
            slot.reused = True
            self._free.append(slot)
        else:
            self._drop(slot)
        if not 200 <= status < 300:
            self._advance(task, None, ApiStatus(status, reason, body, headers.all()))
        else:
            self._advance(task, body, None)

    def _fail(self, slot: _Slot, error: BaseException) -> None:
        """The connection is unusable: drop it; send the request again or fail the task."""
        call, again = slot.call, slot.again and slot.reused and slot.got == 0
        task = self._release(slot)
        self._drop(slot)
        if again and isinstance(error, GONE) and call is not None and self._stop_at is None:
            try:
                fresh = self._take()
            except Exception as exc:
                self._advance(task, None, exc)
                return
            fresh.task, fresh.call, fresh.again = task, call, False
            self._begin(fresh)
            return
        self._advance(task, None, error)

    def _release(self, slot: _Slot) -> Steps[Any]:
        task = slot.task
        assert task is not None
        self._busy.discard(slot)
        slot.task, slot.call, slot.reader, slot.out = None, None, None, b""
        if slot.writing:
            slot.writing = False
            with contextlib.suppress(Exception):
                self._sel.modify(slot.sock, selectors.EVENT_READ, slot)
        return task

    # --- connections ------------------------------------------------------------------

    def _open_first(self) -> None:
        """Open the connections in parallel: one after another, each a TCP and a TLS
        handshake, they would delay the first writes by ``width`` round trips."""
        from concurrent.futures import ThreadPoolExecutor  # ~12 ms to import; only here

        with ThreadPoolExecutor(self.width) as pool:
            opened = list(pool.map(lambda _: self._connect(), range(self.width)))
        for slot in opened:
            if slot is not None:
                self._sel.register(slot.sock, selectors.EVENT_READ, slot)
                self._free.append(slot)

    def _connect(self) -> _Slot | None:
        try:
            return _Slot(self.wire.open(self.wire.timeout[0]))
        except Exception:  # the first request on it will try again and say why
            return None

    def _take(self) -> _Slot:
        """A free connection with nothing waiting on it, or a new one."""
        while self._free:
            slot = self._free.pop()
            if slot.idle.clean():
                return slot
            self._drop(slot)  # closed by the server, or bytes nobody asked for
        slot = _Slot(self.wire.open(self.wire.timeout[0]))
        try:
            self._sel.register(slot.sock, selectors.EVENT_READ, slot)
        except Exception:
            with contextlib.suppress(Exception):
                slot.conn.close()
            raise
        return slot

    def _drop(self, slot: _Slot) -> None:
        with contextlib.suppress(Exception):
            self._sel.unregister(slot.sock)
        with contextlib.suppress(ValueError):
            self._free.remove(slot)
        with contextlib.suppress(Exception):
            slot.conn.close()

    def _close(self) -> None:
        for slot in [*self._free, *self._busy]:
            self._drop(slot)
        self._busy.clear()
        self._sel.close()


def run_many(
    api: Api,
    tasks: Iterator[Steps[T]],
    width: int,
    done: Callable[[T], None],
    *,
    stopping: Callable[[], bool] = lambda: False,
) -> None:
    """:meth:`Mux.run` on the API's connections. Through a proxy the API has no
    connections of its own (labeler.kube.client.Api.wire): there ``width`` threads run the
    tasks one at a time each, with the same results and ``done`` still called in this
    thread."""
    if api.wire is not None:
        Mux(api.wire, width).run(tasks, done, stopping=stopping)
        return
    take = threading.Lock()
    results: queue.SimpleQueue[tuple[T] | None] = queue.SimpleQueue()
    stop_at: list[float] = []  # once stopping: the end of the grace (as in Mux)

    def perform(call: Call) -> bytes:
        if stop_at and time.monotonic() >= stop_at[0]:
            raise stopped_in_flight()
        return api.perform(call)

    def sleep(seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if stop_at:
                raise stopped_before_retry()
            time.sleep(min(left, _TICK))

    def worker() -> None:
        try:
            while not stop_at:
                with take:
                    task = next(tasks, None)
                if task is None:
                    return
                try:
                    results.put((steps.run(task, perform, sleep),))
                except Exception:  # a task's own bug: it alone is lost
                    log.exception("a write task failed")
        finally:
            results.put(None)  # this worker is finished

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, width))]
    for thread in workers:
        thread.start()
    running = len(workers)
    while running:
        if not stop_at and stopping():
            stop_at.append(time.monotonic() + STOP_GRACE)
        if stop_at and time.monotonic() > stop_at[0] + 2 * _TICK:
            return  # requests still in flight are given up; their threads are daemons
        with contextlib.suppress(queue.Empty):
            result = results.get(timeout=_TICK)  # a timeout: signal handlers run meanwhile
            if result is None:
                running -= 1
            else:
                done(result[0])
