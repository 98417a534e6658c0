"""Requests whose answer is read whole (LIST pages, GET, the bulk writer's PATCHes), sent
on keep-alive connections of our own: one per thread, request bytes written with one
``sendall``, the answer parsed with a few ``readline`` calls.

Why: at 10,000 patches, urllib3 and http.client cost about ten times our own work per
request (header dictionaries, two writes, ``email``-based header parsing, the response
object). The connection itself is still made by the urllib3 pool that the official
client builds from its ``Configuration`` (``labeler.kube.client.Api``): the same TCP
connect, TLS context, CA, client certificate, hostname check and timeouts as every other
request; only the bytes on the open socket are ours. Streams (watches) and proxied
servers keep using the pool.

HTTP/1.1 as servers answer the API's requests: a body of ``Content-Length`` bytes or
``chunked``; ``Connection: close`` or a body up to the end of the connection ends the
connection's life. An answer cut off mid-way raises :class:`BrokenAnswer` (retried like a
lost connection by :func:`labeler.kube.errors.call`) and the connection is dropped.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

from labeler.kube.errors import ApiStatus

_MAX_LINE = 65536
_NO_BODY = (204, 304)


class BrokenAnswer(ConnectionError):
    """The connection ended before the whole answer came: nothing can be read from it."""


class _Conn:
    """One open connection and its buffered reader."""

    __slots__ = ("conn", "rfile", "sock", "timeout")

    def __init__(self, conn: Any) -> None:
        self.conn = conn  # the urllib3 connection that opened the socket (kept alive with it)
        self.sock: socket.socket = conn.sock
        self.rfile = self.sock.makefile("rb")
        self.timeout: float | None = None

    def set_timeout(self, seconds: float) -> None:
        # settimeout() costs system calls each time; the read timeout rarely changes.
        if seconds != self.timeout:
            self.sock.settimeout(seconds)
            self.timeout = seconds

    def close(self) -> None:
        try:
            self.rfile.close()
        finally:
            self.conn.close()

    def stale(self) -> bool:
        """Has the server closed (or written to) this idle connection? An idle keep-alive
        connection must have nothing to read; urllib3 checks the same before reuse."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)


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
        self._open = open_conn
        self._prefix = prefix
        self._host = f"Host: {host}\r\n".encode("latin-1")
        self._headers = headers
        self.timeout = timeout
        self._local = threading.local()

    def _conn(self, connect_timeout: float) -> _Conn:
        conn: _Conn | None = getattr(self._local, "conn", None)
        if conn is not None and conn.stale():
            conn.close()
            conn = None
        if conn is None:
            conn = _Conn(self._open(connect_timeout))
            self._local.conn = conn
        return conn

    def _drop(self) -> None:
        conn: _Conn | None = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    def send(
        self,
        method: str,
        target: str,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: tuple[float, float] | None = None,
        echo: bool = True,
    ) -> bytes:
        """The answer's body when its status is below 400, else :class:`ApiStatus`.

        ``echo=False``: a write whose answer (the object echoed back) is not needed; once a
        success status came the write took effect, so a body cut off after it is dropped
        (with the connection) rather than raised, which would send the write again.
        """
        connect, read = timeout or self.timeout
        head = [f"{method} {self._prefix}{target} HTTP/1.1\r\n".encode("latin-1"), self._host]
        for key, value in self._headers().items():
            head.append(f"{key}: {value}\r\n".encode("latin-1"))
        if body is not None:
            head.append(
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n".encode("latin-1")
            )
        head.append(b"\r\n")
        if body:
            head.append(body)
        conn = self._conn(connect)
        try:
            conn.set_timeout(read)
            conn.sock.sendall(b"".join(head))
            status, reason, headers, data, keep = _read_answer(conn.rfile, method, echo)
        except BaseException:
            self._drop()  # whatever is left on it would be read as the next answer
            raise
        if not keep:
            self._drop()
        if status >= 400:
            raise ApiStatus(status, reason, data, headers)
        return data


def _read_answer(
    rfile: Any, method: str, echo: bool = True
) -> tuple[int, str, dict[str, str], bytes, bool]:
    """(status, reason, headers, body, connection reusable) of one answer."""
    while True:
        line = rfile.readline(_MAX_LINE)
        if not line:
            raise BrokenAnswer("the server closed the connection before answering")
        version, _, rest = line.rstrip(b"\r\n").partition(b" ")
        code, _, reason = rest.partition(b" ")
        try:
            status = int(code)
        except ValueError:
            raise BrokenAnswer(f"not an HTTP status line: {line[:80]!r}") from None
        headers = _read_headers(rfile)
        if status >= 200 or status == 101:
            break  # 1xx (100 Continue) is followed by the real answer
    keep = version == b"HTTP/1.1"
    connection = headers.get("Connection", "").lower()
    if "close" in connection:
        keep = False
    elif "keep-alive" in connection:
        keep = True
    if method == "HEAD" or status in _NO_BODY or status < 200:
        return status, reason.decode("latin-1"), headers, b"", keep
    try:
        data, keep = _read_body(rfile, headers, keep)
    except BrokenAnswer:
        if echo or status >= 400:
            raise
        return status, reason.decode("latin-1"), headers, b"", False
    return status, reason.decode("latin-1"), headers, data, keep


def _read_body(rfile: Any, headers: Mapping[str, str], keep: bool) -> tuple[bytes, bool]:
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        data = _read_chunked(rfile)
    elif "Content-Length" in headers:
        try:
            length = int(headers["Content-Length"])
        except ValueError:
            raise BrokenAnswer(f"bad Content-Length {headers['Content-Length']!r}") from None
        data = rfile.read(length)
        if len(data) < length:
            raise BrokenAnswer(f"the answer was cut off after {len(data)} of {length} bytes")
    else:
        data = rfile.read()  # the body ends with the connection
        keep = False
    return data, keep


def _read_headers(rfile: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    while True:
        line = rfile.readline(_MAX_LINE)
        if line in (b"\r\n", b"\n"):
            return headers
        if not line:
            raise BrokenAnswer("the connection ended inside the answer's headers")
        key, sep, value = line.partition(b":")
        if not sep:
            continue
        # Header names are case-insensitive; keep one spelling (Retry-After, Content-Length).
        name = key.strip().decode("latin-1").title()
        text = value.strip().decode("latin-1")
        headers[name] = f"{headers[name]}, {text}" if name in headers else text


def _read_chunked(rfile: Any) -> bytes:
    parts: list[bytes] = []
    while True:
        line = rfile.readline(_MAX_LINE)
        if not line:
            raise BrokenAnswer("the answer was cut off between chunks")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BrokenAnswer(f"bad chunk size line {line[:40]!r}") from None
        if size == 0:
            _read_headers(rfile)  # trailers, then the empty line
            return b"".join(parts)
        chunk = rfile.read(size)
        if len(chunk) < size or rfile.readline(_MAX_LINE) not in (b"\r\n", b"\n"):
            raise BrokenAnswer("the answer was cut off inside a chunk")
        parts.append(chunk)
