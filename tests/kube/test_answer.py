"""The answer reader (labeler.kube.answer) on exact bytes: what it refuses, what it bounds,
and that its cost stays linear. Both transports share these rules (the official client's
path through labeler.kube.strict, checked at the end)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterable

import pytest

from labeler.kube.answer import (
    ERROR_KEPT,
    MAX_HEAD,
    AnswerTooLarge,
    BadAnswer,
    BrokenAnswer,
    WrongAnswer,
    check_object,
    chunk_size,
    feed,
    read_answer,
)
from labeler.kube.strict import StrictResponse, read_body


def read(data: bytes | Iterable[bytes], method: str = "GET", **kw: object) -> tuple:
    """(status, reason, fields, body, keep), the bytes given in the pieces listed."""
    pieces = iter([data] if isinstance(data, bytes) else data)
    return feed(read_answer(method, **kw), lambda size: next(pieces, b""))  # type: ignore[arg-type]


def ok(body: bytes = b"{}", *fields: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(f + b"\r\n" for f in fields)
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


# Go's net/http parseHexUint table (net/http/internal/chunked_test.go), in our words: the
# same sizes accepted and refused. A size is 1-16 hex digits and nothing else.
@pytest.mark.parametrize(
    ("line", "size"),
    [
        (b"x", None),
        (b"0000000000000000", 0),
        (b"0000000000000001", 1),
        (b"ffffffffffffffff", (1 << 64) - 1),
        (b"000000000000bogus", None),
        (b"00000000000000000", None),  # 17 digits: too long, even as zeros
        (b"10000000000000000", None),
        (b"00000000000000001", None),
        (b"", None),
        # What int(x, 16) also takes, and a chunk size must not be:
        (b"-6", None),
        (b"+5", None),
        (b"0x10", None),
        (b"1_0", None),
        (b" 5", None),
        # Extensions after ';' and whitespace before it are allowed (RFC 9112 7.1.1).
        (b"1a;name=value", 26),
        (b"1a \t;ext", 26),
    ],
)
def test_chunk_sizes_as_go_reads_them(line: bytes, size: int | None) -> None:
    if size is None:
        with pytest.raises(BadAnswer, match="bad chunk size"):
            chunk_size(line)
    else:
        assert chunk_size(line) == size


@pytest.mark.parametrize(
    "line",
    [
        b"FOO 200 OK",
        b"HTTP/1.1 2_00 OK",
        b"HTTP/1.1 20 OK",
        b"HTTP/1.1 2000 OK",
        b"HTTP/2 200 OK",
        b"HTTP/2.0 200 OK",
        b"HTTP/1.1  200 OK",
        b"http/1.1 200 OK",
        b"HTTP/1.1 +20 OK",
        b"HTTP/1.1 \xd9\xa2\xd9\xa0\xd9\xa0 OK",  # Arabic-Indic digits: int() takes them
    ],
)
def test_a_status_line_must_be_http_1x_and_three_digits(line: bytes) -> None:
    with pytest.raises(BadAnswer, match=r"not an HTTP/1\.x"):
        read(line + b"\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize(
    ("line", "status", "reason", "keep"),
    [
        (b"HTTP/1.1 200 OK", 200, "OK", True),
        (b"HTTP/1.1 200", 200, "", True),  # no reason: allowed (RFC 9112 4)
        (b"HTTP/1.1 200 ", 200, "", True),
        (b"HTTP/1.0 200 OK", 200, "OK", False),  # 1.0: closes unless it says keep-alive
        (b"HTTP/1.1 422 Unprocessable Entity", 422, "Unprocessable Entity", True),
    ],
)
def test_status_lines_that_are_fine(line: bytes, status: int, reason: str, keep: bool) -> None:
    got = read(line + b"\r\nContent-Length: 2\r\n\r\n{}")
    assert (got[0], got[1], got[3], got[4]) == (status, reason, b"{}", keep)


def test_interim_answers_are_skipped_up_to_five() -> None:
    hints = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
    cont = b"HTTP/1.1 100 Continue\r\n\r\n"
    assert read(cont + hints * 4 + ok())[0] == 200
    with pytest.raises(BadAnswer, match="more than 5 interim"):
        read(cont * 6 + ok())
    # Any other 1xx is the final answer; the connection is not reused after it.
    status, _, _, body, keep = read(b"HTTP/1.1 101 Switching Protocols\r\n\r\nabc")
    assert (status, body, keep) == (101, b"", False)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ([b"Content-Length: 2", b"Transfer-Encoding: chunked"], "both Content-Length"),
        ([b"Transfer-Encoding: gzip, chunked"], "only chunked is read"),
        ([b"Content-Length: 2, 3"], "bad Content-Length"),
        ([b"Content-Length: -2"], "bad Content-Length"),
        ([b"Content-Length: +2"], "bad Content-Length"),
        ([b"Content-Length: 0x2"], "bad Content-Length"),
        ([b"No colon here"], "not a header field line"),
        ([b"Space : before colon"], "not a header field line"),
        ([b" obs-fold continuation"], "not a header field line"),
        ([b"X: bare\nLF"], "not a header field line"),
        ([b"X: a\x00b"], "not a header field line"),
        ([b"X-%d: 1" % i for i in range(101)], "more than 100 header fields"),
    ],
)
def test_framing_that_is_refused(fields: list[bytes], error: str) -> None:
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n"
    with pytest.raises(BadAnswer, match=error):
        read(head + b"0\r\n\r\n{}")


def test_repeated_equal_content_lengths_are_one() -> None:
    assert read(b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n{}")[3] == b"{}"


def test_chunked_in_http_1_0_is_refused() -> None:
    with pytest.raises(BadAnswer, match=r"HTTP/1\.0"):
        read(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")


def test_a_head_is_bounded_and_read_no_further() -> None:
    head = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 1_000_000 + b"\r\n\r\n"
    pieces = [head[i : i + 100] for i in range(0, len(head), 100)]
    asked = iter(pieces)
    taken: list[bytes] = []

    def recv(size: int) -> bytes:
        taken.append(next(asked, b""))
        return taken[-1]

    with pytest.raises(BadAnswer, match=f"longer than {MAX_HEAD} bytes"):
        feed(read_answer("GET"), recv)
    assert sum(map(len, taken)) <= MAX_HEAD + 200  # stopped at the bound, not at 1 MB


def test_heads_in_one_byte_pieces_cost_linear_time() -> None:
    """Four heads of 60 KB (three interim), a byte per receive: the old reader joined and
    searched the whole buffer on every receive (~1 s of CPU per head here); this one
    searches each byte once. The bound is generous: 2 s for what takes ~0.2 s."""
    pad = b"X-Pad: " + b"a" * 60_000 + b"\r\n"
    data = (b"HTTP/1.1 103 Early Hints\r\n" + pad + b"\r\n") * 3 + ok(b"{}", pad.strip())
    start = time.process_time()
    assert read([data[i : i + 1] for i in range(len(data))])[0] == 200
    assert time.process_time() - start < 2.0


def test_a_body_over_the_limit_is_refused_before_it_is_read() -> None:
    with pytest.raises(AnswerTooLarge, match="1000000000000 bytes"):
        read(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n{")
    with pytest.raises(AnswerTooLarge, match="more than 100"):
        read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\ne8d4a51000\r\n{", limit=100)
    chunks = b"".join(b"10\r\n" + b"x" * 16 + b"\r\n" for _ in range(10)) + b"0\r\n\r\n"
    with pytest.raises(AnswerTooLarge):
        read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks, limit=100)
    with pytest.raises(AnswerTooLarge):  # a body that ends with the connection
        read([b"HTTP/1.0 200 OK\r\n\r\n", b"x" * 80, b"x" * 80], limit=100)


def test_a_receive_never_asks_for_what_the_server_announces() -> None:
    asked: list[int] = []
    pieces = iter([b"HTTP/1.1 200 OK\r\nContent-Length: 60000000\r\n\r\n", b""])

    def recv(size: int) -> bytes:
        asked.append(size)
        return next(pieces, b"")

    with pytest.raises(BrokenAnswer, match="cut off"):
        feed(read_answer("GET"), recv)
    assert max(asked) <= 1 << 20


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_an_error_body_is_kept_only_as_far_as_a_message_needs(framing: str) -> None:
    body = b'{"message": "' + b"x" * (10 << 20) + b'"}'
    if framing == "length":
        data = b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    else:
        data = b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n"
        data += b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    status, reason, _, kept, keep = read([data[i : i + 65536] for i in range(0, len(data), 65536)])
    assert (status, reason, len(kept), keep) == (500, "Oops", ERROR_KEPT, False)


def test_bytes_after_an_answer_mean_the_connection_is_not_reused() -> None:
    assert read(ok())[4] is True
    assert read(ok() + ok(b"[]"))[4] is False
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    assert read(chunked)[3:] == (b"{}", True)
    assert read(chunked + b"HTTP/1.1")[4] is False


def test_a_chunk_longer_than_its_size_line_is_refused() -> None:
    with pytest.raises(BadAnswer, match="longer than its size line"):
        read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}}\r\n0\r\n\r\n")


@pytest.mark.parametrize(
    ("body", "name", "fits"),
    [
        (b'{"kind":"Node","metadata":{"name":"n1","uid":"u"}}', "n1", True),
        (b'{"kind": "Node", "metadata": {"name": "n1"}}', "n1", True),
        (b'{"metadata":{"uid":"u","name":"n1"}}', "n1", True),  # name not first: parsed
        (b'{"kind":"Node","metadata":{"name":"n2"}}', "n1", False),
        (b'{"kind":"Status","metadata":{},"status":"Success"}', "n1", False),
        (b"{}", "n1", False),
        (b"[]", "n1", False),
        (b"not json", "n1", False),
        # A label value that looks like metadata does not fool it: escaped in JSON.
        (
            b'{"metadata":{"labels":{"a":"\\"metadata\\":{\\"name\\":\\"n1\\""},"name":"n2"}}',
            "n1",
            False,
        ),
    ],
)
def test_an_answer_must_hold_the_object_asked_for(body: bytes, name: str, fits: bool) -> None:
    if fits:
        check_object(body, name)
    else:
        with pytest.raises(WrongAnswer, match=f"not {name!r}"):
            check_object(body, name)


# --- the official client's path: the same rules on http.client ------------------------


def strict(data: bytes, timeout: float = 5.0) -> tuple[int, bytes]:
    """(status, body) as StrictResponse and read_body read ``data`` from a socket."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(data)
        theirs.shutdown(socket.SHUT_WR)
        ours.settimeout(timeout)
        resp = StrictResponse(ours, method="GET")
        resp.begin()

        class Wrapped:  # what read_body needs of a urllib3 response
            headers = resp.headers

            @staticmethod
            def read(amt: int) -> bytes:
                return resp.read(amt)

        return resp.status, read_body(Wrapped, ok=200 <= resp.status < 300)[0]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"HTTP/1.1 2_00 OK\r\nContent-Length: 0\r\n\r\n", r"not an HTTP/1\.x status line"),
        (b"FOO 200 OK\r\nContent-Length: 0\r\n\r\n", r"not an HTTP/1\.x status line"),
        (b"HTTP/1.1 100 Continue\r\n\r\n" * 6 + ok(), "more than 5 interim"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-6\r\nabc", "bad chunk size"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "both Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n{", "1000000000000 bytes"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}}\r\n0\r\n\r\n",
            "longer than its size line",
        ),
    ],
)
def test_the_official_path_refuses_the_same(data: bytes, error: str) -> None:
    with pytest.raises(BadAnswer, match=error):
        strict(data)


def test_the_official_path_skips_early_hints_and_bounds_the_whole_answer() -> None:
    hints = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
    assert strict(hints + ok(b'{"a":1}')) == (200, b'{"a":1}')
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.settimeout(0.5)
        data = ok(b"x" * 100)

        def trickled() -> None:
            with contextlib.suppress(OSError):
                for i in range(len(data)):  # a byte every 50 ms: each receive is quick
                    theirs.sendall(data[i : i + 1])
                    time.sleep(0.05)

        threading.Thread(target=trickled, daemon=True).start()
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="no whole answer"):
            resp = StrictResponse(ours, method="GET")
            resp.begin()
            resp.read()
        assert time.monotonic() - start < 3.0  # 0.5 s for the whole answer, not per byte


def test_bare_lf_line_ends_are_refused_without_waiting() -> None:
    # Whatever comes next, this head can never end with CRLF CRLF: said at the first look.
    with pytest.raises(BadAnswer, match="bare LF"):
        read([b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}"])


def test_one_object_is_bounded_far_below_a_list_page() -> None:
    from labeler.kube.answer import MAX_BODY, MAX_OBJECT, body_limit

    assert body_limit("n1") == MAX_OBJECT < MAX_BODY == body_limit("")
    big = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (MAX_OBJECT + 1)
    with pytest.raises(AnswerTooLarge):
        read(big, limit=body_limit("n1"))
    assert read(big + b"x" * (MAX_OBJECT + 1), limit=body_limit(""))[0] == 200
