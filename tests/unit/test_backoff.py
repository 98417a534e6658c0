"""Backoff: first delay, doubling, capped, optionally jittered."""

from __future__ import annotations

import pytest

from labeler.base.backoff import Backoff


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
