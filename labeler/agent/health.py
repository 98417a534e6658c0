"""Liveness of the agent's threads: each one beats while it makes progress.

``/healthz`` must mean "every thread is making progress", not "the process answers HTTP":
a thread that died, or that hangs in one call, leaves the agent serving 200 while it no
longer reads its source or repairs its node, and only a failing probe makes the kubelet
restart it. So each thread registers with the longest it may go without a beat (its
longest legitimate blocking call, e.g. one watch request), beats in its loop, and is
reported by name when its beat is older than that or when it ended with an error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Thread:
    max_age: float
    last: float
    died: str | None = None


class Heartbeats:
    """Thread name → last beat. Thread-safe; the clock is injectable for tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._threads: dict[str, _Thread] = {}
        self._lock = threading.Lock()

    def expect(self, name: str, max_age: float) -> None:
        """Start watching ``name``: from now on it must beat every ``max_age`` seconds."""
        with self._lock:
            self._threads[name] = _Thread(max_age, self._clock())

    def beat(self, name: str) -> None:
        with self._lock:
            thread = self._threads.get(name)
            if thread is not None:
                thread.last = self._clock()

    def died(self, name: str, reason: str) -> None:
        """``name`` ended with an error and will not beat again."""
        with self._lock:
            thread = self._threads.get(name)
            if thread is not None:
                thread.died = reason

    def forget(self, name: str) -> None:
        """``name`` ended on purpose (the agent is stopping)."""
        with self._lock:
            self._threads.pop(name, None)

    def problems(self) -> list[str]:
        """One line per thread that died or made no progress in time; empty when healthy."""
        now = self._clock()
        found = []
        with self._lock:
            for name, t in sorted(self._threads.items()):
                if t.died is not None:
                    found.append(f"thread {name} died: {t.died}")
                elif now - t.last > t.max_age:
                    found.append(
                        f"thread {name} made no progress for {now - t.last:.0f}s "
                        f"(limit {t.max_age:.0f}s)"
                    )
        return found

    def probe(self) -> tuple[bool, str]:
        """For ``/healthz``: ok, or every problem on its own line."""
        problems = self.problems()
        return (not problems, "\n".join(problems) if problems else "ok")
