"""Status codes → our errors, in one place; retries honour Retry-After."""

import json

import pytest

from labeler.kube.errors import (
    ApiStatus,
    Conflict,
    Forbidden,
    Invalid,
    Retryable,
    Unauthorized,
    call,
    translate,
)


def api_exc(
    status: int, body: dict[str, object] | None = None, headers: dict[str, str] | None = None
) -> ApiStatus:
    return ApiStatus(status, "R", json.dumps(body or {"message": "m"}).encode(), headers or {})


def test_forbidden_names_verb_and_resource() -> None:
    err = translate(api_exc(403), "patch", "nodes/n1")
    assert isinstance(err, Forbidden)
    assert "lacks 'patch' on 'nodes/n1'" in str(err)


def test_unauthorized_points_at_credentials() -> None:
    assert isinstance(translate(api_exc(401), "list", "nodes"), Unauthorized)


def test_invalid_lists_server_causes() -> None:
    body = {
        "message": "Node is invalid",
        "details": {"causes": [{"field": "metadata.labels", "message": "bad value"}]},
    }
    err = translate(api_exc(422, body), "patch", "nodes/n1")
    assert isinstance(err, Invalid)
    assert err.causes == ["metadata.labels: bad value"]
    assert "metadata.labels: bad value" in str(err)


def test_429_and_5xx_are_retryable_with_retry_after() -> None:
    err = translate(api_exc(429, headers={"Retry-After": "3"}), "patch", "nodes/n1")
    assert isinstance(err, Retryable)
    assert err.retry_after == 3.0
    assert translate(api_exc(503), "get", "nodes/n1").retryable


def test_connection_errors_are_retryable() -> None:
    assert translate(ConnectionRefusedError("refused"), "get", "nodes/n1").retryable


def test_call_retries_then_succeeds_and_waits_retry_after() -> None:
    answers: list[object] = [api_exc(429, headers={"Retry-After": "2"}), api_exc(500), "ok"]
    sleeps: list[float] = []

    def fn() -> str:
        item = answers.pop(0)
        if isinstance(item, Exception):
            raise item
        return str(item)

    assert call(fn, verb="get", resource="nodes", sleep=sleeps.append) == "ok"
    assert len(sleeps) == 2
    assert sleeps[0] >= 2.0


def test_call_does_not_retry_a_conflict() -> None:
    calls = []

    def fn() -> None:
        calls.append(1)
        raise api_exc(409)

    with pytest.raises(Conflict):
        call(fn, verb="patch", resource="nodes/n1", sleep=lambda s: None)
    assert len(calls) == 1


def test_call_gives_up_after_attempts() -> None:
    def fn() -> None:
        raise api_exc(500)

    with pytest.raises(Retryable, match="gave up after 3 attempts, nothing was changed"):
        call(fn, verb="get", resource="nodes", attempts=3, sleep=lambda s: None)


@pytest.mark.parametrize(
    ("verb", "status", "said"),
    [
        ("get", 503, "nothing was changed"),
        ("patch", 429, "nothing was changed"),  # refused before anything was stored
        ("patch", 504, "may or may not have taken effect"),  # a 504 can follow a commit
        ("patch", 500, "may or may not have taken effect"),
    ],
)
def test_giving_up_says_only_what_is_known(verb: str, status: int, said: str) -> None:
    def fn() -> None:
        raise api_exc(status)

    with pytest.raises(Retryable, match=f"gave up after 2 attempts, .*{said}"):
        call(fn, verb=verb, resource="nodes/n1", attempts=2, sleep=lambda s: None)


def test_a_write_once_answered_504_stays_unsure_after_later_429s() -> None:
    answers = iter([504, 429, 429])

    def fn() -> None:
        raise api_exc(next(answers))

    with pytest.raises(Retryable, match="may or may not have taken effect"):
        call(fn, verb="patch", resource="nodes/n1", attempts=3, sleep=lambda s: None)
