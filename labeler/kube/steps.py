"""API work written once, run one at a time or many at once.

A piece of work that talks to the API server (write a node's labels: PATCH, on 409 GET and
PATCH again, retries with backoff) is a generator: it yields a :class:`Call` and is sent the
answer's body, or has the request's exception thrown into it; it yields a :class:`Pause`
to wait. :func:`run` carries it out in the calling thread: the agent runs one, bulk apply
runs thousands on a bounded pool of threads (:mod:`labeler.kube.many`). The rules (what to
send, when to retry, what a 409 means) live in the generator only, so both behave the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """One request whose whole answer is read (``labeler.kube.client.Api.send``)."""

    method: str
    path: str
    body: bytes | None = None
    content_type: str = "application/json"
    echo: bool = True
    accept: str = "application/json"
    # The answer must hold the object of this name (``metadata.name``); "" = not checked.
    name: str = ""


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait this many seconds before going on."""

    seconds: float


Steps = Generator[Call | Pause, Any, T]


def run(
    steps: Steps[T],
    send: Callable[[Call], bytes],
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Carry out ``steps`` in this thread: each Call by ``send``, each Pause by ``sleep``."""
    answer: Any = None
    error: BaseException | None = None
    try:
        while True:
            step = steps.throw(error) if error is not None else steps.send(answer)
            answer, error = None, None
            if isinstance(step, Pause):
                try:
                    sleep(step.seconds)
                except Exception as exc:  # a sleep cut short (a stop) goes to the steps
                    error = exc
                continue
            try:
                answer = send(step)
            except Exception as exc:
                error = exc
    except StopIteration as done:
        return cast(T, done.value)


def now(fn: Callable[[], T]) -> Steps[T]:
    """``fn()`` as steps that send nothing themselves (it may do its own I/O)."""
    return fn()
    yield  # a generator with no step of its own
