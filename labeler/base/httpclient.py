"""What every HTTP request we send shares (to the API server and to instance metadata), on
urllib3: a deadline for the whole answer, and a body read while it streams, up to a cap.

Why a deadline of our own: urllib3's ``Timeout`` bounds each socket operation, not the
answer, so a server that sends a byte every few seconds (of the status line, the headers,
a chunk-size line or the body) would hold a request for ever. Each request is made under a
:class:`Deadline`: the connections of a pool set up by :func:`deadline_pools` hand their
socket to the deadline in force in their thread (:func:`sending`) as the request goes out,
and one watchdog thread shuts those sockets down when the deadline passes. A shut socket
ends any read at once, wherever urllib3 and http.client are in the answer; the request
fails with the deadline's :class:`TimeoutError` (:meth:`Deadline.timed_out`). Between
the reads of a body the deadline is looked at too (:func:`read_capped`).

Only public names of urllib3 and the socket module are used: a pool's
``pool_classes_by_scheme`` and ``ConnectionCls``; a connection's ``request``, ``sock``,
``is_connected`` and ``close``; a response's ``read``, ``connection`` and
``length_remaining``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any


class AnswerTooLarge(Exception):
    """A body over the cap of its reader: not read further."""


class Deadline:
    """The time by which a whole answer must have come. Armed when made; :meth:`close` (or
    the end of a ``with`` block) disarms it. Sockets are shut only while it is armed, so
    once closed, the connections it saw may serve other requests."""

    __slots__ = ("at", "expired", "seconds", "socks")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.expired = False
        self.socks: list[Any] = []
        _WATCHDOG.add(self)

    def __enter__(self) -> Deadline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        _WATCHDOG.remove(self)

    def check(self) -> None:
        """TimeoutError once the deadline has passed."""
        if self.expired or time.monotonic() >= self.at:
            raise self.timed_out()

    def timed_out(self) -> TimeoutError:
        return TimeoutError(f"no whole answer within the read timeout ({self.seconds:g} s)")


class _Watchdog:
    """One thread that shuts the sockets of every deadline that passes. It sleeps until the
    earliest deadline armed, and is woken only when a new one comes before that."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._armed: set[Deadline] = set()
        self._next = math.inf  # when the thread wakes next
        self._thread: threading.Thread | None = None

    def add(self, deadline: Deadline) -> None:
        with self._lock:
            self._armed.add(deadline)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="deadlines", daemon=True)
                self._thread.start()
            if deadline.at < self._next:
                self._wake.notify()

    def remove(self, deadline: Deadline) -> None:
        with self._lock:
            self._armed.discard(deadline)

    def watch(self, deadline: Deadline, sock: Any) -> None:
        """Shut ``sock`` when ``deadline`` passes (at once if it has)."""
        with self._lock:  # under the lock: never shut after the deadline was closed
            deadline.socks.append(sock)
            if deadline.expired:
                _shut(sock)

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for deadline in [d for d in self._armed if d.at <= now]:
                    self._armed.discard(deadline)
                    deadline.expired = True
                    for sock in deadline.socks:
                        _shut(sock)
                self._next = min((d.at for d in self._armed), default=math.inf)
                self._wake.wait(None if self._next == math.inf else self._next - now)


_WATCHDOG = _Watchdog()
_current = threading.local()


def _shut(sock: Any) -> None:
    """End every read and write on ``sock`` (the reader sees the end of the stream). The
    plain socket's shutdown: a TLS socket's own would also drop its TLS state under the
    thread that is reading."""
    with contextlib.suppress(OSError, TypeError, ValueError):
        if isinstance(sock, socket.socket):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        else:  # urllib3's TLS-in-TLS transport: the socket it runs on
            socket.socket.shutdown(sock.socket, socket.SHUT_RDWR)


@contextlib.contextmanager
def sending(deadline: Deadline) -> Iterator[Deadline]:
    """Requests sent in this thread inside the block are under ``deadline`` (on pools set
    up by :func:`deadline_pools`)."""
    _current.deadline = deadline
    try:
        yield deadline
    finally:
        _current.deadline = None


def _connection_class(base: type) -> type:
    class Connection(base):  # type: ignore[misc]
        # Set when an answer on it was for another request (:func:`out_of_step`): the pool
        # takes it for dropped and closes it rather than sending on it again.
        out_of_step = False

        def request(self, *args: Any, **kwargs: Any) -> None:
            super().request(*args, **kwargs)
            deadline = getattr(_current, "deadline", None)
            if deadline is not None and self.sock is not None:
                _WATCHDOG.watch(deadline, self.sock)

        @property
        def is_connected(self) -> bool:
            return not self.out_of_step and bool(super().is_connected)

        def close(self) -> None:
            self.out_of_step = False  # a new socket, when it is used again
            super().close()

    Connection.__name__ = f"Deadline{base.__name__}"
    return Connection


def out_of_step(conn: Any) -> None:
    """Never send on ``conn`` again: an answer read on it was not the one asked for, so the
    one that was may still come. It may be back in its pool already (a body read to the end
    gives it back), so it is marked, and the pool closes it before its next use."""
    if conn is not None:
        conn.out_of_step = True


@functools.lru_cache(maxsize=16)
def _pool_class(base: type) -> type:
    connection = _connection_class(base.ConnectionCls)  # type: ignore[attr-defined]
    return type(f"Deadline{base.__name__}", (base,), {"ConnectionCls": connection})


def deadline_pools(pool_manager: Any) -> None:
    """Make the connection pools ``pool_manager`` creates from now on (one per server and
    scheme; a ProxyManager's too) hand their sockets to the deadline in force."""
    pool_manager.pool_classes_by_scheme = {
        scheme: _pool_class(cls) for scheme, cls in pool_manager.pool_classes_by_scheme.items()
    }


_STEP = 1 << 20  # the most one read asks for, whatever length the server announces


def read_capped(resp: Any, limit: int, deadline: Deadline) -> bytes:
    """The body of a urllib3 response (``preload_content=False``), at most ``limit``
    bytes: over it, :class:`AnswerTooLarge` as soon as that is known (from Content-Length,
    or once more has been read); past ``deadline``, its TimeoutError."""
    length = resp.length_remaining  # Content-Length as http.client read it, or None
    if length is not None and length > limit:
        raise AnswerTooLarge(f"a body of {length} bytes, more than {limit}")
    parts: list[bytes] = []
    have = 0
    while True:  # read at least once: a body of 0 bytes ends as any other
        deadline.check()
        data = resp.read(min(_STEP, limit + 1 - have))
        if not data:
            break
        parts.append(data)
        have += len(data)
        if have > limit:
            raise AnswerTooLarge(f"a body of more than {limit} bytes")
        if length is not None and have >= length:
            break  # all of it: no read more to learn that
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_some(resp: Any, limit: int) -> tuple[bytes, bool]:
    """(at most ``limit`` bytes of a body, whether that is all of it), for an error's
    message: the rest is not read (the caller closes the connection when it is not all)."""
    data = resp.read(limit + 1)  # reads until it has that many bytes or the body ends
    return data[:limit], len(data) <= limit
