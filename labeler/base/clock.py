"""Time as the code that waits sees it: a monotonic reading, a sleep, and the two waits that
end early (an event set, an item queued).

Whatever pauses between attempts (the label writer's retries, the agent's waits) takes a
:class:`Clock`, so that tests can hand in one whose time moves only when they say: its
sleeps return at once, recording how long they would have lasted, and its waits last until
the event or item comes or the test moves time past their end.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    import queue
    import threading

T = TypeVar("T")


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (only differences mean anything)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Pause this thread for ``seconds``."""
        ...

    def wait(self, event: threading.Event, timeout: float) -> bool:
        """Wait until ``event`` is set, at most ``timeout`` seconds; whether it is set."""
        ...

    def take(self, items: queue.Queue[T], timeout: float) -> T:
        """The next item of ``items``, waiting at most ``timeout`` seconds for one;
        ``queue.Empty`` if none came."""
        ...


class SystemClock:
    """The real clock: :func:`time.monotonic`, :func:`time.sleep`, ``Event.wait`` and
    ``Queue.get``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return event.wait(timeout)

    def take(self, items: queue.Queue[T], timeout: float) -> T:
        return items.get(timeout=timeout)


SYSTEM_CLOCK = SystemClock()
