"""Kubernetes API failures, mapped from status codes in this one place.

Each error says which verb and resource failed and what to do; callers decide whether
to retry (``retryable``) and never treat a failure as "no labels".
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from labeler.base.backoff import Backoff
from labeler.base.errors import LabelerError
from labeler.base.httpclient import AnswerTooLarge
from labeler.base.logs import logger
from labeler.kube import steps
from labeler.kube.answer import BadAnswer

log = logger(__name__)
T = TypeVar("T")


class KubeError(LabelerError):
    """A failed API call. ``status`` is the HTTP code, 0 when no answer came."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        verb: str = "",
        resource: str = "",
        retry_after: float | None = None,
        causes: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.verb = verb
        self.resource = resource
        self.retry_after = retry_after
        self.causes = causes or []


class Unauthorized(KubeError):
    pass


class Forbidden(KubeError):
    pass


class NotFound(KubeError):
    pass


class Conflict(KubeError):
    pass


class Invalid(KubeError):
    pass


class Expired(KubeError):
    """410 Gone: a watch or continue token is too old; re-list."""


class Retryable(KubeError):
    """429, 5xx, or no answer at all: try again later. A read changed nothing; a write
    answered 5xx or not at all may have been stored (see ``_outcome``)."""

    retryable = True


class Interrupted(KubeError):
    """The run was asked to stop (Ctrl-C, SIGTERM) before this request's answer came, or
    before its retry: not retried, and not known to have taken effect."""


class ApiStatus(Exception):
    """An answer with an error status, as it came (``labeler.kube.client.Api`` raises it;
    :func:`translate` turns it into one of the errors above)."""

    def __init__(
        self, status: int, reason: str, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.body = body
        self.headers: Mapping[str, str] = headers or {}


def _status_body(exc: ApiStatus) -> dict[str, Any]:
    try:
        body = json.loads(exc.body or b"")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _retry_after(exc: ApiStatus) -> float | None:
    value = exc.headers.get("Retry-After")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    # Seconds, as the API server sends it; "inf", "nan" or a negative number are not.
    return seconds if seconds is not None and 0 <= seconds < 1e9 else None


# A message quoted from an answer is cut to this: a Status message of megabytes from a
# broken proxy must not become megabytes of output.
MESSAGE_SHOWN = 300


def _short(text: str) -> str:
    if len(text) <= MESSAGE_SHOWN:
        return text
    return f"{text[:MESSAGE_SHOWN]}… ({len(text) - MESSAGE_SHOWN} more characters)"


def _found(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """``exc`` or the error inside it of ``kind``: urllib3 wraps what http.client raised
    (``MaxRetryError.reason``, ``ProtocolError.args``, ``__cause__``).

    Only what an error was made from counts, never ``__context__``: that is whatever
    exception was being handled when it was raised. A call made in an ``except`` block (the
    agent's re-read after a broken watch) would otherwise be judged by the old failure."""
    seen: list[BaseException] = [exc]
    for err in seen:
        if isinstance(err, kind):
            return err
        if len(seen) > 16:
            break
        inner = [getattr(err, "reason", None), err.__cause__, *err.args]
        seen.extend(e for e in inner if isinstance(e, BaseException) and e not in seen)
    return None


_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _no_answer(exc: BaseException, *, where_only: bool = False) -> str:
    """' at host:port (Connection refused)': urllib3's nested retry/connection errors,
    which repeat the URL and the pool three times, reduced to where and why."""
    # urllib3 2.x calls it ``conn`` (reading the old ``pool`` warns); 1.x only has ``pool``
    pool: Any = getattr(exc, "conn", None) or getattr(exc, "pool", None)
    host = getattr(pool, "host", None)
    where = f" at {host}:{getattr(pool, 'port', '')}" if host else ""
    if where_only:
        return where
    reason: BaseException | None = exc
    while getattr(reason, "reason", None) is not None and isinstance(
        getattr(reason, "reason", None), BaseException
    ):
        reason = reason.reason  # type: ignore[union-attr]
    text = _short(" ".join(str(reason).split()))
    m = _ERRNO.search(text)
    why = m.group(1).strip() if m else f"{type(reason).__name__}: {text}"
    return f"{where} ({why})"


def translate(exc: BaseException, verb: str, resource: str) -> KubeError:
    """Turn a client exception into one of our errors, with a message that says what to do."""
    if isinstance(exc, KubeError):
        return exc
    what = f"{verb} {resource}"
    kw: dict[str, Any] = {"verb": verb, "resource": resource}
    too_large = _found(exc, AnswerTooLarge)
    if too_large is not None:
        return KubeError(
            f"{what}: the answer is too large ({too_large}); no API server sends that, so "
            "something in between did: check the server address (--kubeconfig, --context)",
            **kw,
        )
    bad = _found(exc, BadAnswer)
    if bad is not None:
        return Retryable(
            f"{what}: an answer that is not the API server's{_no_answer(exc, where_only=True)}"
            f" ({_short(str(bad))}); its connection was dropped",
            **kw,
        )
    if not isinstance(exc, ApiStatus):
        return Retryable(
            f"{what}: no answer from the API server{_no_answer(exc)}; "
            "check the server address and network, then retry",
            verb=verb,
            resource=resource,
        )
    status = exc.status
    body = _status_body(exc)
    message = _short(str(body.get("message") or exc.reason or "").strip())
    kw["status"] = status
    if status < 200 or 300 <= status < 400 or status > 599:
        return KubeError(
            f"{what}: {status} {_short(exc.reason)}: an answer the API server never gives "
            "(it neither redirects nor switches protocols, and HTTP has no status above "
            "599); something in between answered instead: check the server address "
            "(--kubeconfig, --context) and any proxy",
            **kw,
        )
    if status == 401:
        return Unauthorized(
            f"{what}: 401 Unauthorized: the credentials were refused; check --kubeconfig, "
            "--context or the ServiceAccount token",
            **kw,
        )
    if status == 403:
        return Forbidden(
            f"{what}: 403 Forbidden: the RBAC role lacks '{verb}' on '{resource}'; "
            f"grant it in the ClusterRole ({message})",
            **kw,
        )
    if status == 404:
        return NotFound(f"{what}: not found ({message})", **kw)
    if status == 409:
        return Conflict(f"{what}: conflict: {message}", **kw)
    if status == 410:
        return Expired(f"{what}: expired: {message}; re-list and start again", **kw)
    if status in (400, 422):
        details = body.get("details")
        listed = details.get("causes") if isinstance(details, dict) else None
        causes = [
            _short(f"{c.get('field', '')}: {c.get('message', '')}".strip(": "))
            for c in (listed if isinstance(listed, list) else [])[:20]
            if isinstance(c, dict)
        ]
        detail = "; ".join(causes) or message
        return Invalid(f"{what}: rejected by the API server: {detail}", causes=causes, **kw)
    if status == 429 or status >= 500:
        return Retryable(
            f"{what}: {status} {_short(exc.reason or '')} ({message})".replace("  ", " "),
            retry_after=_retry_after(exc),
            **kw,
        )
    return KubeError(f"{what}: {status} {_short(exc.reason)}: {message}", **kw)


def call(
    fn: Callable[[], T],
    *,
    verb: str,
    resource: str,
    attempts: int = 5,
    base_delay: float = 0.2,
    max_delay: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run one API call, retrying 429/5xx/connection errors with backoff and Retry-After."""
    retry = retrying(
        lambda: steps.now(fn),
        verb=verb,
        resource=resource,
        attempts=attempts,
        base_delay=base_delay,
        max_delay=max_delay,
    )
    return steps.run(retry, _no_calls, sleep)


READ_VERBS = frozenset({"get", "list", "watch"})


def _outcome(unsure: bool) -> str:
    """What the refused attempts did to the cluster. A read changes nothing, nor does a
    write the server refused with 429; a write answered 5xx or not at all may have been
    stored (a 504 can come after the write was committed), so say so rather than claim it
    was not."""
    if unsure:
        return "a write may or may not have taken effect: run again to see"
    return "nothing was changed"


def _no_calls(step: steps.Call) -> bytes:
    raise AssertionError(f"unexpected {step}")


def retrying(
    attempt: Callable[[], steps.Steps[T]],
    *,
    verb: str,
    resource: str,
    attempts: int = 5,
    base_delay: float = 0.2,
    max_delay: float = 10.0,
) -> steps.Steps[T]:
    """The steps of ``attempt()``, again after a 429/5xx/connection error, with backoff
    and Retry-After (labeler.kube.steps: a Pause between attempts)."""
    backoff = None  # made at the first failure: most calls never need one
    unsure = False  # has a write been answered in a way that may hide a commit?
    for number in range(1, attempts + 1):
        try:
            return (yield from attempt())
        except Exception as exc:
            err = translate(exc, verb, resource)
            if not err.retryable:
                raise err from exc
            unsure = unsure or (verb not in READ_VERBS and err.status != 429)
            if number == attempts:
                raise Retryable(
                    f"{err}; gave up after {attempts} attempts, {_outcome(unsure)}",
                    status=err.status,
                    verb=verb,
                    resource=resource,
                    retry_after=err.retry_after,
                ) from exc
            backoff = backoff or Backoff(base_delay, max_delay, jitter=(0.5, 1.5))
            delay = backoff.delay(number)
            if err.retry_after is not None:
                delay = max(delay, min(err.retry_after, max_delay * 6))
            log.warning(
                "retrying verb=%s resource=%s attempt=%d delay=%.2fs error=%s",
                verb,
                resource,
                number,
                delay,
                err,
            )
            yield steps.Pause(delay)
    raise AssertionError("unreachable")
