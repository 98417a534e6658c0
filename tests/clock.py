"""A clock for tests (labeler.base.clock) whose time moves only when the code sleeps or the
test says.

A sleep returns at once, recorded in ``slept``, and moves time on. A wait (on an event, or
for an item of a queue) lasts until what it waits for comes or the test moves time past its
end with :meth:`FakeClock.advance`: a test drives the agent's threads by moving time, never
by sleeping. :meth:`FakeClock.idle` waits (in real time, with a generous bound) until named
threads are all parked in such a wait with nothing to wake them, so that a test moves time
only once the threads it drives have got there.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

# Real seconds a waiting thread blocks at a time before it looks at the fake time again: an
# event set or an item queued wakes it at once, a test's advance within this.
_LOOK_EVERY = 0.005


@dataclass
class _Wait:
    end: float  # on the fake clock
    woken: Callable[[], bool]  # what the thread waits for has come


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.slept: list[float] = []
        self._lock = threading.Condition()
        self._waits: dict[str, _Wait] = {}  # thread name → the wait it is in

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds
            self._lock.notify_all()

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return self._park(timeout, event.is_set, lambda: (True,)) is not None

    def take(self, items: queue.Queue[T], timeout: float) -> T:
        def first() -> tuple[T] | None:
            try:
                return (items.get_nowait(),)
            except queue.Empty:
                return None

        got = self._park(timeout, lambda: not items.empty(), first)
        if got is None:
            raise queue.Empty
        return got[0]

    def idle(self, *threads: str, timeout: float = 10.0) -> dict[str, float]:
        """Wait until every thread named is in a wait that has not ended (by time, or by
        what it waits for); the fake time at which each wait ends. AssertionError naming
        the threads that did not get there within ``timeout`` real seconds."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                parked = {
                    name: wait.end
                    for name, wait in self._waits.items()
                    if name in threads and wait.end > self.now and not wait.woken()
                }
                if len(parked) == len(threads):
                    return parked
                left = deadline - time.monotonic()
                if left <= 0:
                    busy = sorted(set(threads) - set(parked))
                    raise AssertionError(f"threads {busy} did not come to a wait in {timeout}s")
                self._lock.wait(min(left, _LOOK_EVERY))

    def run(
        self, thread: str, until: Callable[[], object], *, timeout: float = 10.0, what: str = ""
    ) -> None:
        """Move time on to the end of each wait ``thread`` comes to, until ``until()`` holds
        (looked at before each move); AssertionError naming ``what`` if it does not within
        ``timeout`` real seconds."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout}s waiting for {what or until}")
            with self._lock:
                wait = self._waits.get(thread)
                if wait is not None and wait.end > self.now and not wait.woken():
                    self.now = wait.end
                    self._lock.notify_all()
                self._lock.wait(min(left, _LOOK_EVERY))

    def _park(
        self,
        timeout: float,
        woken: Callable[[], bool],
        take: Callable[[], tuple[T] | None],
    ) -> tuple[T] | None:
        """What ``take`` gives once ``woken`` says it would, or None once the fake time
        passes ``timeout``. Taking and
        leaving the wait happen under the clock's lock, so :meth:`idle` never sees a thread
        in a wait it has already left."""
        name = threading.current_thread().name
        with self._lock:
            end = self.now + timeout
            self._waits[name] = _Wait(end, woken)
            self._lock.notify_all()
            try:
                while True:
                    if woken():
                        got = take()
                        if got is not None:
                            return got
                    if self.now >= end:
                        return None
                    # An advance wakes this at once; an event set or an item queued (which
                    # cannot notify this lock) within _LOOK_EVERY.
                    self._lock.wait(_LOOK_EVERY)
            finally:
                del self._waits[name]
                self._lock.notify_all()
