"""Time as the code that waits sees it: a monotonic reading and a sleep.

Whatever pauses between attempts (the label writer's retries, the agent's waits) takes a
:class:`Clock`, so that tests can hand in one whose time moves only when they say and
whose sleeps return at once, recording how long they would have lasted.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (only differences mean anything)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Pause this thread for ``seconds``."""
        ...


class SystemClock:
    """The real clock: :func:`time.monotonic` and :func:`time.sleep`."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
