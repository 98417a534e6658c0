"""One HTTP/1.1 answer, read strictly and within bounds (RFC 9112), for both ways of
sending a whole-answer request: the blocking connection of labeler.kube.wire and the bulk
writer's event loop (labeler.kube.mux).

The reader is a generator that parses what it is given: each ``yield`` asks for more bytes
(at most the number yielded) and is sent what one receive got, b"" at the end of the
connection. Whoever owns the socket feeds it, so both paths read an answer the same way.

What is refused, and why (an answer from a broken proxy, load balancer or hostile endpoint
must never be taken for the API server's):

- a status line other than ``HTTP/1.x DDD reason``: ``FOO 200 OK``, ``HTTP/1.1 2_00``,
  ``HTTP/2 200`` are not answers we can frame;
- more than :data:`MAX_INTERIM` interim answers (100 Continue, 103 Early Hints; Go's
  net/http allows 5); any other 1xx is returned as the final answer (the caller treats
  every status outside 2xx as an error) and the connection is not reused;
- a head (status line and fields) over :data:`MAX_HEAD` bytes or :data:`MAX_FIELDS`
  fields, a field line that is not ``name: value``, bare CR, LF or NUL in a value;
- ``Content-Length`` that is not digits, or two different ones; ``Transfer-Encoding``
  other than ``chunked``, or together with ``Content-Length`` (RFC 9112 §6.3: a sign of
  request smuggling or response splitting, to be handled as an error), or in HTTP/1.0;
- a chunk size that is not 1-16 hex digits (Go's net/http takes the same), a chunk line
  over :data:`MAX_CHUNK_LINE` bytes, a chunk not followed by CRLF;
- first bytes that are not ``HTTP/1.``, and head lines ended by a bare LF: refused as soon
  as they come, not after a head's worth of bytes or the read timeout;
- a body over ``limit`` (:data:`MAX_BODY`; :data:`MAX_OBJECT` for an answer that holds one
  named object, see :func:`body_limit`). An error answer's body is kept only up to
  :data:`ERROR_KEPT` bytes (what its message needs); the rest is not read and the
  connection is dropped.

Every search for a line ending starts where the previous one stopped, so a head sent a
byte at a time costs time linear in its size; no receive asks for more than
:data:`RECV_MAX` bytes, whatever the server announces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator
from typing import TypeVar, cast

T = TypeVar("T")

MAX_HEAD = 64 << 10  # an API server's head is ~300 bytes; Warning fields add a few hundred
MAX_FIELDS = 100  # http.client's bound
MAX_INTERIM = 5  # Go's net/http bound on 1xx answers before the real one
MAX_CHUNK_LINE = 4096  # Go's net/http bound on a chunk-size line
# A LIST page of 500 full Nodes with 50 images each is ~30 MB; metadata only, ~1 MB.
MAX_BODY = 64 << 20
# One object (a GET of a node, a PATCH's echo): etcd stores at most 1.5 MiB of it.
MAX_OBJECT = 8 << 20
ERROR_KEPT = 64 << 10  # a Status is < 1 KB; a 422 with many causes a few KB
# One receive holds a PATCH's whole answer. Not more: glibc maps and unmaps a buffer of
# 128 KiB or more on every receive, which costs more system time than the receive.
RECV = 65536
# The most one receive asks for when a body's length is known (a LIST page): whatever
# length the server announces, no receive allocates more.
RECV_MAX = 1 << 20
_NO_BODY = (204, 304)
_VERSION = b"HTTP/1."
_INTERIM = (100, 103)

STATUS_LINE = re.compile(r"HTTP/1\.([0-9]) ([0-9]{3})(?: ([^\r\n\x00]*))?")
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_FIELD_LINES = re.compile(rf"(?:\r\n{_TOKEN}:[^\r\n\x00]*)*")
_FIELD_LINE = re.compile(rf"{_TOKEN}:[^\r\n\x00]*")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS = re.compile(r"[0-9]{1,18}")


class BrokenAnswer(ConnectionError):
    """The connection ended before the whole answer came: nothing can be read from it."""


class BadAnswer(BrokenAnswer):
    """Bytes that are not an HTTP/1.x answer as RFC 9112 frames one. Like a cut-off answer
    it says nothing about whether a write took effect, and the connection is dropped."""


class AnswerTooLarge(BadAnswer):
    """A body over the reader's bound: not read further (not retried, see errors.translate)."""


class WrongAnswer(BadAnswer):
    """A whole answer, but for another object than the one asked for: the connection is out
    of step with its requests and is dropped."""


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
    """``buf`` from ``pos`` on, with at least ``size`` bytes (received as needed; the parts
    are joined once). Cut off: BrokenAnswer(``why``) with ``{have}`` the bytes there were."""
    have = len(buf) - pos
    if have >= size:
        return buf, pos
    parts = [buf[pos:]]
    while have < size:
        data = yield min(max(RECV, size - have), RECV_MAX)
        if not data:
            raise BrokenAnswer(why.format(have=have))
        parts.append(data)
        have += len(data)
    return b"".join(parts), 0


def _until(
    buf: bytes,
    pos: int,
    sep: bytes,
    limit: int,
    what: str,
    why: str,
    *,
    bad: bytes = b"",
    prefix: bytes = b"",
) -> Reader[tuple[bytes, bytes, int]]:
    """(the bytes before ``sep``, buf, the position after ``sep``); at most ``limit`` bytes
    before it, starting with ``prefix``, and never ``bad`` (if given) while ``sep`` is not
    found: what breaks those rules is refused as soon as it is received. Each search starts
    where the last one stopped (linear in the bytes)."""
    at = buf.find(sep, pos)
    if at < 0:
        acc = bytearray(memoryview(buf)[pos:])
        start = 0
        while True:
            _refuse_early(acc, start, what, bad, prefix)
            if len(acc) > limit:
                raise BadAnswer(f"{what} longer than {limit} bytes")
            data = yield RECV
            if not data:
                raise BrokenAnswer(why)
            start = max(0, len(acc) - len(sep) + 1)
            acc += data
            at = acc.find(sep, start)
            if at >= 0:
                break
        buf, pos = bytes(acc), 0
    if prefix and not buf.startswith(prefix, pos):
        raise BadAnswer(f"not an HTTP/1.x answer: {buf[pos : pos + 40]!r}")
    if at - pos > limit:
        raise BadAnswer(f"{what} longer than {limit} bytes")
    return buf[pos:at], buf, at + len(sep)


def _refuse_early(acc: bytearray, start: int, what: str, bad: bytes, prefix: bytes) -> None:
    """BadAnswer if what has come cannot become what :func:`_until` looks for."""
    if prefix and acc[: len(prefix)] != prefix[: len(acc)]:
        raise BadAnswer(f"not an HTTP/1.x answer: {bytes(acc[:40])!r}")
    if bad and acc.find(bad, max(0, start - len(bad) + 1)) >= 0:
        raise BadAnswer(f"{what} has lines ended by a bare LF, not CRLF")


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


def _head(text: str) -> tuple[int, int, str, Fields]:
    """(minor version, status, reason, fields) of a head, or BadAnswer."""
    first, crlf, rest = text.partition("\r\n")
    status_line = STATUS_LINE.fullmatch(first)
    if status_line is None:
        raise BadAnswer(f"not an HTTP/1.x status line: {first[:80]!r}")
    lines = crlf + rest
    if lines.count("\r\n") > MAX_FIELDS:
        raise BadAnswer(f"more than {MAX_FIELDS} header fields")
    if _FIELD_LINES.fullmatch(lines) is None:
        bad = next((x for x in rest.split("\r\n") if not _FIELD_LINE.fullmatch(x)), rest)
        raise BadAnswer(f"not a header field line: {bad[:80]!r}")
    minor, code, reason = status_line.groups()
    return int(minor), int(code), reason or "", Fields(lines)


def read_answer(method: str, echo: bool = True, limit: int = MAX_BODY) -> Reader[Answer]:
    """(status, reason, header fields, body, connection reusable) of one answer.

    ``limit``: the most bytes of a 2xx body (over it: :class:`AnswerTooLarge`). ``echo``
    False: a write whose echoed object is not needed; once a 2xx status came the write took
    effect, so a body cut off (or over the limit) after it is dropped with the connection
    rather than raised, which would send the write again.
    """
    buf, pos = b"", 0
    interim = 0
    while True:
        if len(buf) == pos:
            buf, pos = (yield RECV), 0
            if not buf:
                raise BrokenAnswer("the server closed the connection before answering")
        # Not an answer from its first bytes on, or lines ended by bare LFs: said at once,
        # not after a head's worth or the read timeout.
        head, buf, pos = yield from _until(
            buf,
            pos,
            b"\r\n\r\n",
            MAX_HEAD,
            "the answer's head",
            "the connection ended inside the answer's headers",
            bad=b"\n\n",
            prefix=_VERSION,
        )
        minor, status, reason, fields = _head(head.decode("latin-1"))
        if status not in _INTERIM:
            break
        interim += 1
        if interim > MAX_INTERIM:
            raise BadAnswer(f"more than {MAX_INTERIM} interim (1xx) answers before the answer")
    if status < 200:  # 101 and other 1xx: what follows is not an HTTP answer
        return status, reason, fields, b"", False
    keep = minor >= 1
    connection = fields.get("connection").lower()
    if "close" in connection:
        keep = False
    elif "keep-alive" in connection:
        keep = True
    if method == "HEAD" or status in _NO_BODY:
        return status, reason, fields, b"", keep and len(buf) == pos
    ok = 200 <= status < 300
    try:
        data, after, whole = yield from _read_body(
            buf, pos, fields, minor, limit if ok else ERROR_KEPT, truncate=not ok
        )
    except BrokenAnswer:
        if not ok or echo:
            raise
        return status, reason, fields, b"", False
    return status, reason, fields, data, keep and whole and not after


def _read_body(
    buf: bytes, pos: int, fields: Fields, minor: int, limit: int, *, truncate: bool
) -> Reader[tuple[bytes, bytes, bool]]:
    """(body, bytes received after it, whole). Bytes after the body mean the connection is
    out of step with its answers; a body cut at ``limit`` (``truncate``) leaves the rest
    unread. Either way the connection cannot be reused."""
    coding = fields.get("transfer-encoding")
    if coding:
        if coding.lower() != "chunked":
            raise BadAnswer(f"Transfer-Encoding {coding[:40]!r}: only chunked is read")
        if "content-length" in fields:
            raise BadAnswer("both Content-Length and Transfer-Encoding: chunked (RFC 9112 6.3)")
        if minor == 0:
            raise BadAnswer("Transfer-Encoding in an HTTP/1.0 answer (RFC 9112 6.1)")
        return (yield from _read_chunked(buf, pos, limit, truncate))
    if "content-length" in fields:
        length = content_length(fields.get("content-length"))
        whole = length <= limit
        if not whole and not truncate:
            raise AnswerTooLarge(f"a body of {length} bytes, more than {limit}")
        take = min(length, limit)
        if len(buf) - pos == take:
            return buf[pos:], b"", whole
        why = f"the answer was cut off after {{have}} of {length} bytes"
        buf, pos = yield from _fill(buf, pos, take, why)
        return buf[pos : pos + take], buf[pos + take :], whole
    # The body ends with the connection.
    parts = [buf[pos:]]
    have = len(parts[0])
    while have <= limit and (data := (yield RECV)):
        parts.append(data)
        have += len(data)
    if have > limit:
        if not truncate:
            raise AnswerTooLarge(f"a body of more than {limit} bytes")
        return b"".join(parts)[:limit], b"", False
    return b"".join(parts), b"", False


def body_limit(name: str) -> int:
    """The bound of a 2xx body: one object's when the answer must hold the object ``name``,
    else a LIST page's."""
    return MAX_OBJECT if name else MAX_BODY


def content_length(value: str) -> int:
    """The one length of a Content-Length field; a repeated field must repeat one value."""
    if len(value) <= 18 and value.isascii() and value.isdigit():  # the usual: one number
        return int(value)
    values = {v.strip() for v in value.split(",")}
    if len(values) != 1 or not _DIGITS.fullmatch(next(iter(values))):
        raise BadAnswer(f"bad Content-Length {value[:40]!r}")
    return int(values.pop())


def chunk_size(line: bytes) -> int:
    """The size on a chunk line (its extensions after ';' ignored): 1-16 hex digits, as Go's
    net/http reads it; anything else (a sign, '0x', '_', spaces inside) is BadAnswer."""
    size = line.split(b";", 1)[0].rstrip(b" \t")
    if not _HEX.fullmatch(size):
        raise BadAnswer(f"bad chunk size line {line[:40]!r}")
    return int(size, 16)


def _read_chunked(
    buf: bytes, pos: int, limit: int, truncate: bool
) -> Reader[tuple[bytes, bytes, bool]]:
    parts: list[bytes] = []
    have = 0
    while True:
        line, buf, pos = yield from _until(
            buf,
            pos,
            b"\r\n",
            MAX_CHUNK_LINE,
            "a chunk size line",
            "the answer was cut off between chunks",
        )
        size = chunk_size(line)
        if size == 0:
            break
        if have + size > limit:
            if not truncate:
                raise AnswerTooLarge(f"a chunked body of more than {limit} bytes")
            size = limit - have
            buf, pos = yield from _fill(buf, pos, size, "the answer was cut off inside a chunk")
            parts.append(buf[pos : pos + size])
            return b"".join(parts), b"", False
        buf, pos = yield from _fill(buf, pos, size + 2, "the answer was cut off inside a chunk")
        if buf[pos + size : pos + size + 2] != b"\r\n":
            raise BadAnswer("a chunk longer than its size line says")
        parts.append(buf[pos : pos + size])
        have += size
        pos += size + 2
    for _ in range(MAX_FIELDS + 1):  # trailer fields, then the empty line
        line, buf, pos = yield from _until(
            buf, pos, b"\r\n", MAX_HEAD, "a trailer line", "the answer was cut off in its trailers"
        )
        if not line:
            return b"".join(parts), buf[pos:], True
    raise BadAnswer(f"more than {MAX_FIELDS} trailer fields")


# --- is the answer for the object asked for? -------------------------------------------

# An API server writes an object's metadata with its name first: found without parsing the
# whole answer (a PATCH's echo is parsed for nothing else).
_META_NAME = re.compile(rb'"metadata"\s*:\s*\{\s*"name"\s*:\s*"([^"\\]*)"')


def object_name(body: bytes) -> str | None:
    """``metadata.name`` of the object in ``body``; None if it is not an object with one."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else None


def check_object(body: bytes, name: str) -> None:
    """WrongAnswer unless ``body`` is the object named ``name``."""
    found = _META_NAME.search(body)
    if found is not None and found.group(1) == name.encode():
        return
    actual = object_name(body)  # parsed only when the quick look did not find the name
    if actual != name:
        what = f"object {actual!r}" if actual is not None else "no named object"
        raise WrongAnswer(
            f"the answer holds {what}, not {name!r}: the connection was out of step with "
            "its requests (a proxy or load balancer in between?) and was dropped"
        )
