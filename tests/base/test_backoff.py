"""Backoff: first delay, doubling, capped, optionally jittered."""

from __future__ import annotations

import pytest

from labeler.base.backoff import Backoff, Reconnect
from tests.clock import FakeClock


def test_doubles_from_the_first_delay_up_to_the_cap() -> None:
    b = Backoff(1.0, 10.0)
    assert [b.delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_zero_failures_waits_the_first_delay() -> None:
    assert Backoff(0.5, 4.0).delay(0) == 0.5


def test_a_long_outage_stays_at_the_cap() -> None:
    assert Backoff(0.2, 10.0).delay(100_000) == 10.0


def test_jitter_scales_the_capped_delay_within_its_bounds() -> None:
    b = Backoff(2.0, 3.0, jitter=(0.5, 1.5))
    assert b.delay(1, rand=lambda: 0.0) == 1.0
    assert b.delay(1, rand=lambda: 0.5) == 2.0
    assert b.delay(5, rand=lambda: 0.999) == pytest.approx(3.0 * 1.499)


def test_real_jitter_spreads_the_delays() -> None:
    b = Backoff(1.0, 1.0, jitter=(0.5, 1.0))
    delays = {b.delay(1) for _ in range(50)}
    assert len(delays) > 1 and all(0.5 <= d <= 1.0 for d in delays)


@pytest.mark.parametrize(
    "args", [(-1.0, 1.0, (1.0, 1.0)), (1.0, -1.0, (1.0, 1.0)), (1.0, 1.0, (1.5, 0.5))]
)
def test_negative_delays_or_reversed_jitter_are_rejected(
    args: tuple[float, float, tuple[float, float]],
) -> None:
    with pytest.raises(ValueError, match="invalid backoff"):
        Backoff(*args)


def test_a_watch_that_delivered_an_event_reconnects_after_the_first_delay() -> None:
    """The exporter's node watch once reopened 1, 2, 4, 8, 16, then 30 s after each cut:
    a watch that streamed events before it broke starts a new run of failures."""
    clock = FakeClock()
    r = Reconnect(Backoff(1.0, 30.0), clock=clock.monotonic)
    waits = []
    for _ in range(6):
        r.opened()
        r.delivered()
        clock.now += 0.5  # broken soon after its event
        waits.append(r.failed())
    assert waits == [1.0] * 6


def test_a_watch_open_a_while_without_events_was_healthy() -> None:
    clock = FakeClock()
    r = Reconnect(Backoff(1.0, 30.0), healthy_after=10.0, clock=clock.monotonic)
    assert [r.failed() for _ in range(3)] == [1.0, 2.0, 4.0]  # refused: not even opened
    r.opened()
    clock.now += 9.0
    assert r.failed() == 8.0  # opened, silent and cut within 9 s: still failing
    r.opened()
    clock.now += 10.0
    assert r.failed() == 1.0  # open 10 s: it worked


def test_quick_for_retries_at_the_first_delay_then_doubles() -> None:
    clock = FakeClock()
    r = Reconnect(Backoff(1.0, 30.0), quick_for=5.0, clock=clock.monotonic)
    r.opened()
    r.delivered()
    waits = []
    for _ in range(9):
        waits.append(r.failed())
        clock.now += waits[-1]
    assert waits == [1.0] * 5 + [1.0, 2.0, 4.0, 8.0]


def test_failures_in_a_row_back_off_up_to_the_cap_and_a_normal_end_resets() -> None:
    r = Reconnect(Backoff(1.0, 30.0), clock=FakeClock().monotonic)
    assert [r.failed() for _ in range(7)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    r.ended()  # the server ended a watch at its timeout
    assert r.failed() == 1.0
