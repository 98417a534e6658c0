"""The exporter's LIST + WATCH loop, with scripted calls and a fake clock: how long it waits
after each break, and how stale it says its state is."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from labeler.audit.listwatch import ListWatch, Loop
from labeler.base.backoff import Backoff
from labeler.kube.errors import Expired, Retryable


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Stop(threading.Event):
    """A stop event whose waits pass at once on the fake clock, each one recorded; set
    once the script has run out."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(timeout)
        self.clock.now += timeout
        return self.is_set()


Step = tuple[str, float]  # ("event" | "cut" | "refused" | "end" | "expired", seconds later)


class Scripted(ListWatch):
    """Each WATCH plays the next script: events, then a cut, a normal end, or a 410; a
    "refused" WATCH fails before it opens. ``stale`` records the staleness seen at the
    start of each call."""

    what = "scripted"
    resource = "nodes"

    def __init__(self, loop: Loop, clock: Clock, scripts: list[list[Step]]) -> None:
        super().__init__(None, loop)
        self.clock = clock
        self.scripts = scripts
        self.lists = 0
        self.stale: list[float] = []

    def relist(self) -> str:
        self.lists += 1
        self.stale.append(self.fresh.stale())
        return "1"

    def watch(self, resource_version: str) -> Iterator[str]:
        self.stale.append(self.fresh.stale())
        if not self.scripts:
            self.stop.set()
            return
        script = self.scripts.pop(0)
        if script[0][0] == "refused":
            self.clock.now += script[0][1]
            raise Retryable("watch nodes: no answer from the API server (Connection refused)")
        self.opened()
        for kind, later in script:
            self.clock.now += later
            if kind == "event":
                yield "2"
            elif kind == "cut":
                raise Retryable("watch nodes: the answer was cut off between chunks")
            elif kind == "expired":
                raise Expired("watch nodes: too old resource version")
            elif kind == "end":
                return


def run(scripts: list[list[Step]], quick_for: float = 0.0) -> tuple[Scripted, Stop]:
    clock = Clock()
    stop = Stop(clock)
    loop = Loop(stop, Backoff(1.0, 30.0), 300, quick_for=quick_for, clock=clock)
    watch = Scripted(loop, clock, scripts)
    watch.run()
    return watch, stop


def test_every_break_of_a_watch_that_delivered_events_waits_only_the_first_delay() -> None:
    healthy_then_cut = [("event", 0.0), ("event", 5.0), ("cut", 1.0)]
    watch, stop = run([healthy_then_cut] * 6)
    assert stop.waits == [1.0] * 6  # was 1, 2, 4, 8, 16, 30
    assert watch.lists == 1  # a cut is resumed from the version seen, not re-listed


def test_failures_in_a_row_back_off_and_a_healthy_watch_starts_again_from_the_first() -> None:
    refused: list[Step] = [("refused", 0.0)]
    silent_a_while_then_cut: list[Step] = [("cut", 12.0)]
    _, stop = run([refused] * 5 + [silent_a_while_then_cut, refused])
    assert stop.waits == [1.0, 2.0, 4.0, 8.0, 16.0, 1.0, 2.0]


def test_after_a_working_watch_broke_it_is_tried_every_second_for_a_while() -> None:
    """An API server restart: the watch is back within a second of the server, not after
    a wait that doubled meanwhile; a longer outage backs off from then on."""
    refused: list[Step] = [("refused", 0.0)]
    _, stop = run([[("event", 0.0), ("cut", 1.0)]] + [refused] * 34, quick_for=30.0)
    assert stop.waits == [1.0] * 30 + [1.0, 2.0, 4.0, 8.0, 16.0]


def test_a_normal_end_is_no_failure_and_a_410_lists_again_at_once() -> None:
    watch, stop = run([[("end", 300.0)], [("cut", 0.5)], [("expired", 0.0)], [("end", 1.0)]])
    assert stop.waits == [1.0]  # only the cut
    assert watch.lists == 2


def test_staleness_counts_from_the_break_until_a_watch_is_open_again() -> None:
    refused: list[Step] = [("refused", 0.5)]
    watch, _ = run([[("event", 0.0), ("cut", 20.0)], refused, refused, [("end", 1.0)]])
    # the first LIST at start (never in sync yet: 0 s on the fake clock), the first
    # WATCH right after it; after the cut: 1 s wait, refused 0.5 s later, 2 s wait,
    # refused again, 4 s wait; open again; after its normal end, in sync.
    assert watch.stale == [0.0, 0.0, 1.0, 3.5, 8.0, 0.0]
    assert watch.fresh.stale() == 0.0


def test_a_resource_not_served_is_in_sync_and_asked_again_later() -> None:
    class Optional(Scripted):
        optional = True

        def relist(self) -> str:
            from labeler.kube.errors import NotFound

            self.lists += 1
            if self.lists > 2:
                self.stop.set()
            raise NotFound("list workloads: not found")

    clock = Clock()
    stop = Stop(clock)
    loop = Loop(stop, Backoff(1.0, 30.0), 300, recheck=300.0, quick_for=0.0, clock=clock)
    watch = Optional(loop, clock, [])
    watch.run()
    assert stop.waits == [300.0, 300.0, 300.0]
    assert watch.fresh.stale() == 0.0


def test_an_unexpected_error_is_a_failure_like_any_other() -> None:
    class Broken(Scripted):
        def watch(self, resource_version: str) -> Iterator[str]:
            if len(self.stale) > 3:  # the LIST's and three failed WATCHes
                self.stop.set()
                return iter(())
            self.stale.append(self.fresh.stale())
            raise ValueError("a bug in reading an event")

    clock = Clock()
    stop = Stop(clock)
    watch = Broken(Loop(stop, Backoff(1.0, 30.0), 300, quick_for=0.0, clock=clock), clock, [])
    watch.run()
    assert stop.waits == [1.0, 2.0, 4.0]
    assert watch.stale == [0.0, 0.0, 1.0, 3.0]
