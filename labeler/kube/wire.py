"""Requests whose answer is read whole (LIST pages, GET, the bulk writer's PATCHes), sent
on keep-alive connections of our own: one per thread, request bytes written with one
``sendall``, the answer read with as few ``recv`` calls as its size allows (one for a
PATCH's answer) and parsed by labeler.kube.answer.

Why: at 10,000 patches, urllib3 and http.client cost about ten times our own work per
request (header dictionaries, two writes, ``email``-based header parsing, the response
object). The connection itself is still made by the urllib3 pool that the official
client builds from its ``Configuration`` (``labeler.kube.client.Api``): the same TCP
connect, TLS context, CA, client certificate, hostname check and timeouts as every other
request; only the bytes on the open socket are ours. Streams (watches) and proxied
servers keep using the pool.

What is trusted: an answer read whole and strictly (labeler.kube.answer); success is a
2xx status only; an answer that must hold a named object (``name``) holds that one. A kept
connection is looked at before every reuse: an idle keep-alive connection has nothing to
read, so bytes waiting on it (an answer nobody asked for, or the server's close) mean it
is out of step and it is dropped. An answer cut off mid-way raises
:class:`~labeler.kube.answer.BrokenAnswer` (retried like a lost connection by
:func:`labeler.kube.errors.call`) and the connection is dropped.

Timeouts: the read timeout bounds the whole answer, not each receive (the API server's own
``--request-timeout`` is 60 s too), so an answer trickled a byte at a time ends at the same
deadline as silence. A plain TCP socket is left in blocking mode with the timeout set in
the kernel (``SO_RCVTIMEO``/``SO_SNDTIMEO``); with a Python-level timeout CPython polls the
socket before every ``send`` and ``recv``, a system call per call that the kernel timeout
makes unnecessary. A TLS socket keeps Python's timeout: CPython's TLS layer retries a read
the kernel gave up on when the socket is blocking, so a kernel timeout would never fire.
"""

from __future__ import annotations

import contextlib
import functools
import select
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from labeler.kube.answer import BrokenAnswer, body_limit, check_object, feed, read_answer
from labeler.kube.errors import ApiStatus

SAFE_METHODS = ("GET", "HEAD")  # may always be sent twice


@functools.lru_cache(maxsize=16)
def _accept_line(accept: str) -> bytes:
    return f"Accept: {accept}\r\n".encode("latin-1")


# The connection went away under a request: if nothing of the answer came, a request
# that may be sent twice is sent again on a new connection (Wire.send, labeler.kube.mux).
GONE = (BrokenAnswer, ConnectionResetError, BrokenPipeError)


def read_timeout(seconds: float | None) -> TimeoutError:
    return TimeoutError(f"no whole answer within the read timeout ({seconds:g} s)")


class Idle:
    """Is this kept connection still open with nothing waiting on it? Between answers the
    server has nothing to say: bytes waiting are an answer nobody asked for (it would be
    read as the next request's), and a readable end-of-file is the server's close. One
    poll(2) with no wait, the socket's bytes untouched (a peeking recv cost ten times as
    much: it also runs the kernel's receive path)."""

    __slots__ = ("poller", "sock", "tls")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.tls = isinstance(sock, ssl.SSLSocket)
        self.poller = select.poll()
        self.poller.register(sock, select.POLLIN)  # a close or an error is reported too

    def clean(self) -> bool:
        # An SSLSocket here (``tls``), which has pending(): decrypted bytes not yet read.
        if self.tls and self.sock.pending():  # type: ignore[attr-defined]
            return False
        try:
            return not self.poller.poll(0)
        except (OSError, ValueError):
            return False


class _Conn:
    """One open connection, its unread bytes, its timeout and the current deadline."""

    __slots__ = ("conn", "deadline", "got", "idle", "kernel", "read", "sock", "timeout")

    def __init__(self, conn: Any) -> None:
        self.conn = conn  # the urllib3 connection that opened the socket (kept alive with it)
        self.sock: socket.socket = conn.sock
        self.idle = Idle(self.sock)
        self.kernel = not isinstance(self.sock, ssl.SSLSocket)
        self.timeout: float | None = None
        self.got = 0  # bytes of the current answer received so far
        self.read = 0.0  # the read timeout of the current request: its whole answer
        self.deadline = 0.0

    def set_timeout(self, seconds: float) -> None:
        # Setting a timeout costs system calls; the read timeout rarely changes.
        if seconds == self.timeout:
            return
        self.timeout = seconds
        if self.kernel:
            whole = int(seconds)
            micro = int((seconds - whole) * 1e6)
            tv = struct.pack("@ll", whole, micro if whole or micro else 1)  # 0 = never
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
                self.sock.settimeout(None)
                return
            except OSError:  # a platform without them: Python's timeout
                self.kernel = False
        self.sock.settimeout(seconds)

    def start(self, read: float) -> None:
        """A new request: its whole answer must come within ``read`` seconds."""
        self.got = 0
        self.read = read
        self.deadline = time.monotonic() + read
        self.set_timeout(read)

    def sendall(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except BlockingIOError:  # SO_SNDTIMEO ran out: the kernel says EAGAIN
            raise TimeoutError(f"could not send the request within {self.timeout:g} s") from None

    def recv(self, size: int) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise read_timeout(self.read)
        if self.timeout is not None and left < self.timeout:
            self.set_timeout(left)  # near the deadline: no receive may wait past it
        try:
            data = self.sock.recv(size)
        except BlockingIOError:  # SO_RCVTIMEO ran out: the kernel says EAGAIN
            raise read_timeout(self.read) from None
        except TimeoutError:
            raise read_timeout(self.read) from None
        self.got += len(data)
        return data

    def close(self) -> None:
        self.conn.close()


class Wire:
    """Whole-answer requests to one server; thread-safe (a connection per thread).

    ``open_conn(connect_timeout)`` returns a connected urllib3 connection (TCP and TLS
    done); ``headers()`` gives the headers of each request (credentials may be refreshed).
    """

    def __init__(
        self,
        open_conn: Callable[[float], Any],
        *,
        host: str,
        prefix: str,
        headers: Callable[[], Mapping[str, str]],
        timeout: tuple[float, float],
    ) -> None:
        self.open = open_conn
        self._prefix = prefix
        self._host = f"Host: {host}\r\n".encode("latin-1")
        self._headers = headers
        self._head: tuple[dict[str, str], bytes] = ({}, b"")  # last headers and their bytes
        self.timeout = timeout
        self._local = threading.local()

    def _conn(self, connect_timeout: float) -> tuple[_Conn, bool]:
        """This thread's connection, and whether it served a request before."""
        conn: _Conn | None = getattr(self._local, "conn", None)
        if conn is not None and not conn.idle.clean():
            self._drop()
            conn = None
        if conn is not None:
            return conn, True
        conn = _Conn(self.open(connect_timeout))
        self._local.conn = conn
        return conn, False

    def _drop(self) -> None:
        conn: _Conn | None = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    def _header_bytes(self) -> bytes:
        """The header lines of a request; re-encoded only when they changed (a token)."""
        headers = dict(self._headers())
        last, encoded = self._head
        if headers != last:
            encoded = self._host + "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode(
                "latin-1"
            )
            self._head = (headers, encoded)
        return encoded

    def request_bytes(
        self,
        method: str,
        target: str,
        body: bytes | None,
        content_type: str,
        accept: str = "application/json",
    ) -> bytes:
        """A whole request as it goes on the wire (header order does not matter: the
        request's own lines first, then the cached shared ones)."""
        line = f"{method} {self._prefix}{target} HTTP/1.1\r\n"
        if body is not None:
            line += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        parts = (line.encode("latin-1"), self._header_bytes(), _accept_line(accept), b"\r\n")
        return b"".join((*parts, body)) if body is not None else b"".join(parts)

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: tuple[float, float] | None = None,
        echo: bool = True,
        repeatable: bool = False,
        accept: str = "application/json",
        name: str = "",
    ) -> bytes:
        """The answer's body when its status is 2xx, else :class:`ApiStatus` (a 1xx other
        than 100/103 and every 3xx included: the API never answers so).

        ``echo=False``: a write whose answer (the object echoed back) is not needed; once a
        success status came the write took effect, so a body cut off after it is dropped
        (with the connection) rather than raised, which would send the write again.

        ``name``: the answer must hold the object of that name (``metadata.name``), else
        :class:`~labeler.kube.answer.WrongAnswer` and the connection is dropped.

        ``repeatable``: the request may be sent twice (GET and HEAD always may). A kept
        connection the server closed just as the request went out gives no answer at
        all; such a request is sent once more on a new connection. For a write that is
        safe only when a repeat cannot apply twice: a PATCH guarded by the node's
        ``resourceVersion`` is refused with 409 if the first one did arrive, and the
        writer re-plans from the node read again.
        """
        connect, read = timeout or self.timeout
        payload = self.request_bytes(method, target, body, content_type, accept)
        again = repeatable or method in SAFE_METHODS
        while True:
            conn, reused = self._conn(connect)
            try:
                conn.start(read)
                conn.sendall(payload)
                reader = read_answer(method, echo, body_limit(name))
                status, reason, headers, data, keep = feed(reader, conn.recv)
                if name and 200 <= status < 300:
                    check_object(data, name)
            except GONE:
                self._drop()  # whatever is left on it would be read as the next answer
                if again and reused and conn.got == 0:
                    again = False
                    continue
                raise
            except BaseException:
                self._drop()
                raise
            break
        if not keep:
            self._drop()
        if not 200 <= status < 300:
            raise ApiStatus(status, reason, data, headers.all())
        return data
