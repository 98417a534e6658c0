"""Many pieces of API work (labeler.kube.steps) at once: a bounded pool of threads over the
one connection pool of labeler.kube.client.Api (sized to the concurrency by the caller).

Each thread takes the next task, carries it out with :func:`labeler.kube.steps.run` (the
same code as one write at a time) and hands its result to the calling thread, which calls
``done`` in order of completion. The threads are daemons rather than a ThreadPoolExecutor's:
a request still in flight when the run gives up at a stop must not hold the process's exit.

Whatever one task does, the others go on: a task turns its own errors into a result; one
that raises anyway is logged and has no result. Once ``stopping()``: no task starts, a task
waiting to retry is ended with :class:`~labeler.kube.errors.Interrupted`, and requests in
flight get at most :data:`STOP_GRACE` more seconds, so a run ends soon after a signal
whatever the server does.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from labeler.base.logs import logger
from labeler.kube import steps
from labeler.kube.errors import Interrupted
from labeler.kube.steps import Call, Steps

if TYPE_CHECKING:
    from labeler.kube.client import Api

log = logger(__name__)
T = TypeVar("T")
_TICK = 0.1  # the longest wait without looking at ``stopping()``
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


def run_many(
    api: Api,
    tasks: Iterator[Steps[T]],
    width: int,
    done: Callable[[T], None],
    *,
    stopping: Callable[[], bool] = lambda: False,
) -> None:
    """Carry out every task, ``width`` at a time on ``width`` threads, calling ``done`` with
    each one's result in this thread. Once ``stopping()`` is true no new task starts; those
    under way finish within :data:`STOP_GRACE`, or are given up."""
    take = threading.Lock()
    results: queue.SimpleQueue[tuple[T] | None] = queue.SimpleQueue()
    stop_at: list[float] = []  # once stopping: the end of the grace

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
