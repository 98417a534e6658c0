"""Per-thread liveness (labeler.agent.health): /healthz names a thread that died or stalled."""

from labeler.agent.health import Heartbeats
from tests.clock import FakeClock


def test_a_thread_that_beats_in_time_is_healthy() -> None:
    clock = FakeClock(100.0)
    beats = Heartbeats(clock.monotonic)
    beats.expect("source", 60)
    clock.now += 59
    assert beats.probe() == (True, "ok")
    beats.beat("source")
    clock.now += 59
    assert beats.problems() == []


def test_a_stalled_thread_is_named_with_its_age_and_limit() -> None:
    clock = FakeClock(100.0)
    beats = Heartbeats(clock.monotonic)
    beats.expect("source", 60)
    beats.expect("watch", 400)
    clock.now += 61
    ok, text = beats.probe()
    assert not ok
    assert text == "thread source made no progress for 61s (limit 60s)"
    beats.beat("source")
    assert beats.probe() == (True, "ok")  # progress again: healthy again


def test_a_dead_thread_fails_at_once_and_stays_failed() -> None:
    clock = FakeClock(100.0)
    beats = Heartbeats(clock.monotonic)
    beats.expect("loop", 300)
    beats.died("loop", "RecursionError: maximum recursion depth exceeded")
    beats.beat("loop")
    assert beats.problems() == [
        "thread loop died: RecursionError: maximum recursion depth exceeded"
    ]


def test_a_thread_that_ended_on_purpose_is_forgotten_and_unknown_names_ignored() -> None:
    clock = FakeClock(100.0)
    beats = Heartbeats(clock.monotonic)
    beats.expect("watch", 10)
    beats.forget("watch")
    beats.beat("nobody")
    beats.died("nobody", "x")
    clock.now += 1000
    assert beats.probe() == (True, "ok")
