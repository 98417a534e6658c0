"""Requests whose answer is read whole (LIST pages, GET, the bulk writer's PATCHes), sent
on keep-alive connections of our own: one per thread, request bytes written with one
``sendall``, the answer read with as few ``recv`` calls as its size allows (one for a
PATCH's answer) and split with ``bytes.find``.

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

Timeouts: a plain TCP socket is left in blocking mode with the read timeout set in the
kernel (``SO_RCVTIMEO``/``SO_SNDTIMEO``); with a Python-level timeout CPython polls the
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
from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeVar, cast

from labeler.kube.errors import ApiStatus

# One recv holds a PATCH's whole answer. Not more: a buffer of 128 KiB or more is mapped
# and unmapped by malloc on every receive, which costs more system time than the receive.
_RECV = 65536
_MAX_HEAD = 1 << 20
_NO_BODY = (204, 304)
SAFE_METHODS = ("GET", "HEAD")  # may always be sent twice
# A kept connection idle for longer than this is checked before reuse (has the server
# closed it?). A connection in steady use is not checked: a close that races with a
# request is retried once on a new connection when that is safe (see Wire.send).
_IDLE = 1.0
T = TypeVar("T")


@functools.lru_cache(maxsize=16)
def _accept_line(accept: str) -> bytes:
    return f"Accept: {accept}\r\n".encode("latin-1")


class BrokenAnswer(ConnectionError):
    """The connection ended before the whole answer came: nothing can be read from it."""


# The connection went away under a request: if nothing of the answer came, a request
# that may be sent twice is sent again on a new connection (Wire.send, labeler.kube.mux).
GONE = (BrokenAnswer, ConnectionResetError, BrokenPipeError)


def read_timeout(seconds: float | None) -> TimeoutError:
    return TimeoutError(f"no answer within the read timeout ({seconds:g} s)")


class _Conn:
    """One open connection, its unread bytes and its timeout."""

    __slots__ = ("conn", "got", "kernel", "sock", "timeout", "used")

    def __init__(self, conn: Any) -> None:
        self.conn = conn  # the urllib3 connection that opened the socket (kept alive with it)
        self.sock: socket.socket = conn.sock
        self.kernel = not isinstance(self.sock, ssl.SSLSocket)
        self.timeout: float | None = None
        self.used = time.monotonic()
        self.got = 0  # bytes of the current answer received so far

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

    def sendall(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except BlockingIOError:  # SO_SNDTIMEO ran out: the kernel says EAGAIN
            raise TimeoutError(f"could not send the request within {self.timeout:g} s") from None

    def recv(self, size: int) -> bytes:
        try:
            data = self.sock.recv(size)
        except BlockingIOError:  # SO_RCVTIMEO ran out: the kernel says EAGAIN
            raise read_timeout(self.timeout) from None
        self.got += len(data)
        return data

    def close(self) -> None:
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
        if conn is not None and time.monotonic() - conn.used > _IDLE and conn.stale():
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
    ) -> bytes:
        """The answer's body when its status is below 400, else :class:`ApiStatus`.

        ``echo=False``: a write whose answer (the object echoed back) is not needed; once a
        success status came the write took effect, so a body cut off after it is dropped
        (with the connection) rather than raised, which would send the write again.

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
            conn.got = 0
            try:
                conn.set_timeout(read)
                conn.sendall(payload)
                status, reason, headers, data, keep = feed(read_answer(method, echo), conn.recv)
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
        if keep:
            conn.used = time.monotonic()
        else:
            self._drop()
        if status >= 400:
            raise ApiStatus(status, reason, data, headers.all())
        return data


# The answer readers below are generators that parse what they are given: each ``yield``
# asks for more bytes (at most the number yielded) and is sent what one receive got, b""
# at the end of the connection. The blocking connection above feeds them from its socket;
# the bulk writer's event loop (labeler.kube.mux) feeds them as sockets become readable.
# One parser for both, so the two paths cannot read an answer differently.

Reader = Generator[int, bytes, T]


def feed(reader: Reader[T], recv: Callable[[int], bytes]) -> T:
    """Run ``reader`` to its end on a blocking ``recv``."""
    try:
        size = next(reader)
        while True:
            size = reader.send(recv(size))
    except StopIteration as done:
        return cast(T, done.value)


def _fill(buf: bytes, pos: int, size: int, why: str) -> Reader[tuple[bytes, int]]:
    """``buf`` from ``pos`` on, with at least ``size`` bytes (received as needed).

    Cut off: BrokenAnswer(``why``), where ``{have}`` is the number of bytes there were."""
    have = len(buf) - pos
    if have >= size:
        return buf, pos
    parts = [buf[pos:]]
    while have < size:
        data = yield max(_RECV, size - have)
        if not data:
            raise BrokenAnswer(why.format(have=have))
        parts.append(data)
        have += len(data)
    return b"".join(parts), 0


def _until(buf: bytes, pos: int, sep: bytes, why: str) -> Reader[tuple[bytes, bytes, int]]:
    """(the bytes before ``sep``, buf, the position after ``sep``)."""
    at = buf.find(sep, pos)
    while at < 0:
        if len(buf) - pos > _MAX_HEAD:
            raise BrokenAnswer(f"a header or chunk line longer than {_MAX_HEAD} bytes")
        buf, pos = yield from _fill(buf, pos, len(buf) - pos + 1, why)
        at = buf.find(sep, pos)
    return buf[pos:at], buf, at + len(sep)


class Fields:
    """An answer's header fields as they came. A field is found by its name when asked
    for: building a dictionary of every field cost more than the rest of reading a
    PATCH's answer, which needs three fields of seven."""

    __slots__ = ("_lower", "_text")

    def __init__(self, text: str) -> None:
        self._text = text  # the lines after the status line, each after its CRLF
        self._lower = text.lower()

    def get(self, name: str) -> str:
        """The value of the field ``name`` (lower case), "" if absent; a repeated field's
        values joined by ", "."""
        key = f"\r\n{name}:"
        at = self._lower.find(key)
        values = []
        while at >= 0:
            start = at + len(key)
            end = self._lower.find("\r\n", start)
            values.append(self._text[start : end if end >= 0 else None].strip())
            at = self._lower.find(key, start)
        return ", ".join(values)

    def __contains__(self, name: str) -> bool:
        return f"\r\n{name}:" in self._lower

    def all(self) -> dict[str, str]:
        """Every field, names in one spelling (Retry-After, Content-Length)."""
        fields: dict[str, str] = {}
        for line in self._text.split("\r\n"):
            key, sep, value = line.partition(":")
            if sep:
                name = key.strip().title()
                text = value.strip()
                fields[name] = f"{fields[name]}, {text}" if name in fields else text
        return fields


Answer = tuple[int, str, Fields, bytes, bool]


def read_answer(method: str, echo: bool = True) -> Reader[Answer]:
    """(status, reason, header fields, body, connection reusable) of one answer."""
    buf, pos = b"", 0
    while True:
        if not buf:
            buf = yield _RECV
            if not buf:
                raise BrokenAnswer("the server closed the connection before answering")
        head, buf, pos = yield from _until(
            buf, pos, b"\r\n\r\n", "the connection ended inside the answer's headers"
        )
        text = head.decode("latin-1")
        first, crlf, rest = text.partition("\r\n")
        version, _, status_text = first.partition(" ")
        code, _, reason = status_text.partition(" ")
        try:
            status = int(code)
        except ValueError:
            raise BrokenAnswer(f"not an HTTP status line: {first[:80]!r}") from None
        fields = Fields(crlf + rest)
        if status >= 200 or status == 101:
            break  # 1xx (100 Continue) is followed by the real answer
        buf, pos = buf[pos:], 0
    keep = version == "HTTP/1.1"
    connection = fields.get("connection").lower()
    if "close" in connection:
        keep = False
    elif "keep-alive" in connection:
        keep = True
    if method == "HEAD" or status in _NO_BODY or status < 200:
        return status, reason, fields, b"", keep and len(buf) == pos
    try:
        data, after, keep = yield from _read_body(buf, pos, fields, keep)
    except BrokenAnswer:
        if echo or status >= 400:
            raise
        return status, reason, fields, b"", False
    return status, reason, fields, data, keep and not after


def _read_body(
    buf: bytes, pos: int, fields: Fields, keep: bool
) -> Reader[tuple[bytes, bytes, bool]]:
    """(body, bytes received after it, keep); bytes after the body mean the connection is
    out of step with its answers and cannot be reused."""
    if "chunked" in fields.get("transfer-encoding").lower():
        body, after = yield from _read_chunked(buf, pos)
        return body, after, keep
    if "content-length" in fields:
        value = fields.get("content-length")
        try:
            length = int(value)
        except ValueError:
            raise BrokenAnswer(f"bad Content-Length {value!r}") from None
        if len(buf) - pos == length:
            return buf[pos:], b"", keep
        why = f"the answer was cut off after {{have}} of {length} bytes"
        buf, pos = yield from _fill(buf, pos, length, why)
        return buf[pos : pos + length], buf[pos + length :], keep
    parts = [buf[pos:]]  # the body ends with the connection
    while data := (yield _RECV):
        parts.append(data)
    return b"".join(parts), b"", False


def _read_chunked(buf: bytes, pos: int) -> Reader[tuple[bytes, bytes]]:
    parts: list[bytes] = []
    while True:
        line, buf, pos = yield from _until(
            buf, pos, b"\r\n", "the answer was cut off between chunks"
        )
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BrokenAnswer(f"bad chunk size line {line[:40]!r}") from None
        if size == 0:
            while True:  # trailers, then the empty line
                line, buf, pos = yield from _until(
                    buf, pos, b"\r\n", "the answer was cut off in its trailers"
                )
                if not line:
                    return b"".join(parts), buf[pos:]
        buf, pos = yield from _fill(buf, pos, size + 2, "the answer was cut off inside a chunk")
        if buf[pos + size : pos + size + 2] != b"\r\n":
            raise BrokenAnswer("the answer was cut off inside a chunk")
        parts.append(buf[pos : pos + size])
        pos += size + 2
