"""Exponential backoff: how long to wait after the n-th failure in a row.

One rule for every retry loop (IMDS reads, API calls, the agent's and the audit exporter's
watches): ``first`` after the first failure, doubling after each further one, never more
than ``cap``; then, optionally, scaled by a random factor in ``jitter`` so that many
clients that failed together do not retry together. Callers own their waiting (usually
``stop_event.wait(delay)``, so that SIGTERM cuts a wait short).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

# 2**64 times any sensible first delay is past every cap; bounding the exponent keeps a
# long outage (thousands of failures) from building huge numbers.
_MAX_DOUBLINGS = 64


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
