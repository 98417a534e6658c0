"""Exponential backoff: how long to wait after the n-th failure in a row.

One rule for every retry loop (IMDS reads, API calls, the agent's and the audit exporter's
watches): ``first`` after the first failure, doubling after each further one, never more
than ``cap``; then, optionally, scaled by a random factor in ``jitter`` so that many
clients that failed together do not retry together. Callers own their waiting (usually
``stop_event.wait(delay)``, so that SIGTERM cuts a wait short).

:class:`Reconnect` is the one policy of every watch (the agent's node watch, each of the
audit exporter's LIST + WATCH loops): what counts as a failure "in a row" for a connection
that may have worked for hours before it broke.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

# 2**64 times any sensible first delay is past every cap; bounding the exponent keeps a
# long outage (thousands of failures) from building huge numbers.
_MAX_DOUBLINGS = 64

# Seconds a watch must stay open to count as healthy even without an event: longer than a
# server that accepts and drops at once takes, far shorter than a watch request lasts.
HEALTHY_AFTER = 10.0
# Seconds after a working watch broke during which the audit exporter (one replica) tries
# again every first delay: past an API server restart or a 10 s window of errors.
QUICK_FOR = 30.0
# Seconds a watch may be down before what it keeps counts as stale (the audit exporter's
# /readyz): a few reconnects at the longest backoff, so one cut or one slow LIST never
# flips readiness, an outage does.
STALE_AFTER = 60.0


@dataclass(frozen=True)
class Backoff:
    """``first`` seconds, doubling, at most ``cap``; times a factor drawn from ``jitter``
    (low, high), whose default (1, 1) means no jitter."""

    first: float
    cap: float
    jitter: tuple[float, float] = (1.0, 1.0)

    def __post_init__(self) -> None:
        low, high = self.jitter
        if self.first < 0 or self.cap < 0 or not 0 <= low <= high:
            raise ValueError(f"invalid backoff {self!r}: delays and factors must be ≥ 0")

    def delay(self, failures: int, *, rand: Callable[[], float] = random.random) -> float:
        """The wait after ``failures`` failures in a row (1 = the first failure)."""
        doublings = min(max(0, failures - 1), _MAX_DOUBLINGS)
        base = min(self.cap, self.first * 2.0**doublings)
        low, high = self.jitter
        if low == high:
            return base * low
        return base * (low + (high - low) * rand())


class Reconnect:
    """When to open a broken watch again.

    A watch that delivered an event, or stayed open ``healthy_after`` seconds, was working:
    its break starts a new run of failures, so the next try comes ``backoff.first`` after
    it, however many breaks came before. For ``quick_for`` seconds after that break every
    try comes ``backoff.first`` after the last (a network blip or an API server restart
    takes seconds, and the watch should be back within ``first`` of its end); only tries
    that go on failing past that back off further, doubling up to ``backoff.cap``. A watch
    the server ended normally (its timeout) is no failure at all. A DaemonSet, thousands of
    clients, keeps ``quick_for`` at 0: the doubling spreads their retries out.

    The caller tells it what happens: :meth:`opened` when a watch's answer has begun,
    :meth:`delivered` for each event, :meth:`ended` at a normal end, and :meth:`failed`
    (which returns the wait) when a watch, or the read that precedes it, failed.
    """

    def __init__(
        self,
        backoff: Backoff,
        *,
        healthy_after: float = HEALTHY_AFTER,
        quick_for: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backoff = backoff
        self.healthy_after = healthy_after
        self.quick_for = quick_for
        self.clock = clock
        self.failures = 0  # failed tries in a row, since the last healthy watch
        self._quick = 0  # of which in the quick_for seconds after the break
        self._broke = 0.0  # when the run of failures began
        self._opened: float | None = None  # when the current watch's answer began

    def opened(self) -> None:
        self._opened = self.clock()

    def delivered(self) -> None:
        self.failures = 0

    def ended(self) -> None:
        self.failures = 0
        self._opened = None

    def failed(self) -> float:
        """One more failure; the seconds to wait before the next try."""
        now = self.clock()
        opened, self._opened = self._opened, None
        if opened is not None and now - opened >= self.healthy_after:
            self.failures = 0  # open long enough to have been working
        if self.failures == 0:
            self._broke, self._quick = now, 0
        self.failures += 1
        if now - self._broke < self.quick_for:
            self._quick += 1
            return self.backoff.delay(1)
        return self.backoff.delay(self.failures - self._quick)
