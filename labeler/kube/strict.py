"""The official client's transport (urllib3 on http.client) held to the rules of our own
reader (labeler.kube.answer), for the requests that go through it: everything behind a
proxy, everything when the user asks for it (``TOPOLOGY_LABELER_TRANSPORT=official``), and
streams (watches: their status line, fields, chunks and deadline, which is the watch's own
``timeoutSeconds`` + 30 s; labeler.kube.raw reads a stream with ``read1``, through
http.client's chunk reader, as urllib3's own ``stream`` would parse chunk sizes itself).

http.client alone takes ``HTTP/1.1 2_00`` as 200 (``int()`` accepts the underscore), skips
any number of 100 Continue answers, reads a chunk size of ``-6`` as a length to read,
accepts Content-Length together with chunked, and waits on every receive anew (an answer
trickled a byte at a time never times out). :class:`StrictResponse` is http.client's
response with those parts replaced; it is installed on the connection pools of an
``Api`` (:func:`harden`), so it applies to every pool the official client's pool manager
creates, through a proxy too. What a body may weigh is bounded where it is read
(:func:`read_body`).
"""

from __future__ import annotations

import functools
import http.client
import io
import time
from typing import Any

from labeler.kube.answer import (
    ERROR_KEPT,
    MAX_BODY,
    MAX_FIELDS,
    MAX_HEAD,
    MAX_INTERIM,
    STATUS_LINE,
    AnswerTooLarge,
    BadAnswer,
    chunk_size,
    content_length,
)

_LINE = 65536  # http.client's bound on one line


class _Until(io.RawIOBase):
    """The socket's bytes, each receive waiting at most until the answer's deadline."""

    def __init__(self, sock: Any, timeout: float) -> None:
        self.sock = sock
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left > 0:
            self.sock.settimeout(min(left, self.timeout))
            try:
                return int(self.sock.recv_into(buffer))
            except TimeoutError:
                pass
        raise TimeoutError(f"no whole answer within the read timeout ({self.timeout:g} s)")

    def fileno(self) -> int:
        return int(self.sock.fileno())


class StrictResponse(http.client.HTTPResponse):
    """http.client's response, strict and bounded as labeler.kube.answer reads answers;
    what it refuses is a :class:`~labeler.kube.answer.BadAnswer`."""

    def __init__(self, sock: Any, debuglevel: int = 0, method: Any = None, url: Any = None):
        super().__init__(sock, debuglevel, method, url)
        timeout = sock.gettimeout()
        if timeout is not None:  # the read timeout bounds the whole answer
            self.fp.close()
            self.fp = io.BufferedReader(_Until(sock, timeout))
        self._interim = 0

    def _refuse(self, cause: BadAnswer) -> BadAnswer:
        """``cause``, to raise, the connection closed: urllib3 wraps it (an OSError) in its
        ProtocolError, and labeler.kube.errors.translate finds it there."""
        self._close_conn()  # type: ignore[attr-defined]  # http.client's own clean-up
        return cause

    def _read_status(self) -> tuple[str, int, str]:
        while True:
            line = self.fp.readline(_LINE + 1)
            if not line:
                raise http.client.RemoteDisconnected(
                    "Remote end closed connection without response"
                )
            text = str(line, "iso-8859-1")
            found = STATUS_LINE.fullmatch(text.removesuffix("\r\n"))
            if found is None or not text.endswith("\r\n"):
                raise self._refuse(BadAnswer(f"not an HTTP/1.x status line: {text[:80]!r}"))
            minor, code, reason = found.groups()
            status = int(code)
            if status in (100, 103):
                self._interim += 1
                if self._interim > MAX_INTERIM:
                    raise self._refuse(BadAnswer(f"more than {MAX_INTERIM} interim (1xx) answers"))
                if status == 103:  # http.client would take it for the answer
                    http.client.parse_headers(self.fp)
                    continue
            return f"HTTP/1.{minor}", status, reason or ""

    def begin(self) -> None:
        super().begin()
        fields = self.headers
        size = sum(len(k) + len(v) + 4 for k, v in fields.items())
        if len(fields) > MAX_FIELDS or size > MAX_HEAD:
            raise self._refuse(BadAnswer(f"a head over {MAX_FIELDS} fields or {MAX_HEAD} bytes"))
        coding = fields.get_all("transfer-encoding") or []
        lengths = fields.get_all("content-length") or []
        if coding:
            if ", ".join(coding).lower() != "chunked":
                raise self._refuse(BadAnswer(f"Transfer-Encoding {coding!r}: only chunked"))
            if lengths:
                raise self._refuse(
                    BadAnswer("both Content-Length and Transfer-Encoding: chunked (RFC 9112 6.3)")
                )
            if self.version == 10:
                raise self._refuse(BadAnswer("Transfer-Encoding in an HTTP/1.0 answer"))
        elif lengths:
            try:
                content_length(", ".join(lengths))
            except BadAnswer as exc:
                raise self._refuse(exc) from None
        if 100 <= self.status < 200:  # 101 and the like: what follows is not HTTP
            self.length = 0
            self.will_close = True

    def _get_chunk_left(self) -> int | None:
        # At the end of a chunk http.client drops two bytes unseen; they must be its CRLF.
        # (_safe_read and _get_chunk_left are http.client's own, absent from its stubs.)
        if self.chunk_left == 0:
            if self._safe_read(2) != b"\r\n":  # type: ignore[attr-defined]
                raise self._refuse(BadAnswer("a chunk longer than its size line says"))
            self.chunk_left = None
        return super()._get_chunk_left()  # type: ignore[misc, no-any-return]

    def _read_next_chunk_size(self) -> int:
        line = self.fp.readline(_LINE + 1)
        if not line.endswith(b"\n"):
            raise self._refuse(BadAnswer("the answer was cut off between chunks"))
        try:
            size = chunk_size(line.removesuffix(b"\n").removesuffix(b"\r"))
        except BadAnswer as exc:
            raise self._refuse(exc) from None
        if size > MAX_BODY:  # no body may be that large: not waited for
            raise self._refuse(AnswerTooLarge(f"a chunk of {size} bytes, more than {MAX_BODY}"))
        return size

    def _read_and_discard_trailer(self) -> None:
        for _ in range(MAX_FIELDS + 1):
            line = self.fp.readline(_LINE + 1)
            if line in (b"\r\n", b"\n", b""):
                return
        raise self._refuse(BadAnswer(f"more than {MAX_FIELDS} trailer fields"))


@functools.lru_cache(maxsize=8)
def _strict_connection(cls: type) -> type:
    return type(f"Strict{cls.__name__}", (cls,), {"response_class": StrictResponse})


@functools.lru_cache(maxsize=8)
def _strict_pool(cls: type) -> type:
    # A urllib3 pool class: ConnectionCls is its class attribute, which a bare type hides.
    connection = _strict_connection(cls.ConnectionCls)  # type: ignore[attr-defined]
    return type(f"Strict{cls.__name__}", (cls,), {"ConnectionCls": connection})


def harden(pool_manager: Any) -> None:
    """Make every connection pool ``pool_manager`` creates from now on read answers with
    :class:`StrictResponse` (its pools per scheme; a ProxyManager's too)."""
    pool_manager.pool_classes_by_scheme = {
        scheme: _strict_pool(cls) for scheme, cls in pool_manager.pool_classes_by_scheme.items()
    }


_STEP = 1 << 20  # the most one read asks for


def read_body(resp: Any, *, ok: bool, limit: int = MAX_BODY) -> tuple[bytes, bool]:
    """(the body of a urllib3 response, whole?): a 2xx body up to ``limit`` (over it:
    AnswerTooLarge, nothing more read), an error's body up to ERROR_KEPT (the rest left
    unread: the caller must close the connection when it is not whole)."""
    limit = limit if ok else ERROR_KEPT
    length = resp.headers.get("content-length")  # checked by StrictResponse
    if ok and length is not None and content_length(length) > limit:
        raise AnswerTooLarge(f"a body of {content_length(length)} bytes, more than {limit}")
    parts: list[bytes] = []
    have = 0
    while have <= limit:
        data = resp.read(min(_STEP, limit + 1 - have))
        if not data:
            return b"".join(parts), True
        parts.append(data)
        have += len(data)
    if ok:
        raise AnswerTooLarge(f"a body of more than {limit} bytes")
    return b"".join(parts)[:limit], False
