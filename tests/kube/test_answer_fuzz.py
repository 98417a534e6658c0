"""Fuzzing the answer reader with mutated real replies.

The seeds are answers the fake API server gave to real requests (a PATCH's echo, a GET of a
node, a LIST page, a 409), each also re-framed as chunked, as HTTP/1.0 up to the close,
and after a 100 Continue. Hypothesis mutates them (bytes flipped, inserted, deleted,
repeated, numbers changed, cut short) and splits them into receives of any size.

What must hold whatever the bytes: the reader ends (it asks for at most one receive after
the end of the connection); it raises only its own errors (BrokenAnswer and subclasses);
a body is never over its bound; the receive sizes do not change the result; an answer it
calls reusable left no byte unread; and where both readers accept the bytes, the official
client's path (labeler.kube.strict on http.client) reads the same status and body.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import re
import signal
import socket
from collections.abc import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labeler.kube.answer import ERROR_KEPT, MAX_BODY, RECV_MAX, BrokenAnswer, read_answer
from labeler.kube.strict import StrictResponse, read_body
from tests.fakekube import FakeKube

LIMIT = 4096  # a small body bound, so that mutated lengths cross it often


def _exchange(fake: FakeKube, request: bytes) -> bytes:
    """The fake's answer to ``request`` (sent with Connection: close), as bytes."""
    with socket.create_connection((fake.host, fake.port), timeout=10) as sock:
        sock.sendall(request)
        parts = []
        while data := sock.recv(65536):
            parts.append(data)
    return b"".join(parts)


def _reframed(answer: bytes) -> list[bytes]:
    """``answer`` as it came, chunked, HTTP/1.0 up to the close, and after 100 Continue."""
    head, _, body = answer.partition(b"\r\n\r\n")
    fields = [f for f in head.split(b"\r\n")[1:] if not f.lower().startswith(b"content-length")]
    status = head.split(b"\r\n")[0]
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 7]), body[i : i + 7]) for i in range(0, len(body), 7)
    )
    chunked = b"\r\n".join([status, *fields, b"Transfer-Encoding: chunked"]) + b"\r\n\r\n"
    old = b"\r\n".join([status.replace(b"HTTP/1.1", b"HTTP/1.0"), *fields]) + b"\r\n\r\n"
    return [
        answer,
        chunked + chunks + b"0\r\n\r\n",
        old + body,
        b"HTTP/1.1 100 Continue\r\n\r\n" + answer,
    ]


@functools.cache
def seeds() -> tuple[bytes, ...]:
    with FakeKube() as fake:
        fake.add_node("n1", labels={"a.io/x": "1"})
        close = b"Host: h\r\nConnection: close\r\nAccept: application/json\r\n"
        patch = b'{"metadata":{"labels":{"a.io/y":"2"}}}'
        accept_meta = b"Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1\r\n"
        requests = [
            b"GET /api/v1/nodes/n1 HTTP/1.1\r\n" + close + b"\r\n",
            b"GET /api/v1/nodes?limit=1 HTTP/1.1\r\n" + close + b"\r\n",
            b"PATCH /api/v1/nodes/n1 HTTP/1.1\r\n"
            + close.replace(b"Accept: application/json\r\n", accept_meta)
            + b"Content-Type: application/merge-patch+json\r\nContent-Length: %d\r\n\r\n"
            % len(patch)
            + patch,
            b"PATCH /api/v1/nodes/n1 HTTP/1.1\r\n"
            + close
            + b"Content-Type: application/merge-patch+json\r\nContent-Length: 41\r\n\r\n"
            + b'{"metadata":{"resourceVersion":"1"}}     ',
            b"GET /api/v1/nodes/none HTTP/1.1\r\n" + close + b"\r\n",
        ]
        answers = [_exchange(fake, r) for r in requests]
    assert [a.split(b" ", 2)[1] for a in answers] == [b"200", b"200", b"200", b"409", b"404"]
    return tuple(framed for a in answers for framed in _reframed(a))


# What broken proxies and hostile servers put where a number or a field belongs.
NUMBERS = [b"-6", b"0", b"ffffffffffffffff", b"1_0", b"2_00", b"101", b"302", b"1000000000000"]
FIELDS = [
    b"Content-Length: 5\r\n",
    b"Content-Length: 1000000000000\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Connection: close\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\n" * 3,
    b"X-Pad: " + b"a" * 3000 + b"\r\n",
]


def _mutate(data: bytes, ops: list[tuple[int, int, int, bytes]]) -> bytes:
    for kind, at, size, extra in ops:
        at %= len(data) + 1
        if kind == 0:  # flip a byte
            flipped = (data[at : at + 1] or b"\0")[0] ^ (size | 1)
            data = data[:at] + bytes([flipped]) + data[at + 1 :]
        elif kind == 1:  # insert bytes
            data = data[:at] + extra + data[at:]
        elif kind == 2:  # delete a range
            data = data[:at] + data[at + size :]
        elif kind == 3:  # repeat a range
            data = data[:at] + data[at : at + size] * 3 + data[at:]
        elif kind == 4:  # change a number (a length, a chunk size, a status)
            found = list(re.finditer(rb"[0-9a-f]+", data))
            if found:
                m = found[at % len(found)]
                data = data[: m.start()] + NUMBERS[size % len(NUMBERS)] + data[m.end() :]
        elif kind == 5:  # a hostile field (or interim answers) after a line end
            ends = [m.end() for m in re.finditer(rb"\r\n", data)] or [0]
            at = ends[at % len(ends)]
            data = data[:at] + FIELDS[size % len(FIELDS)] + data[at:]
        else:  # cut short
            data = data[:at]
    return data


MUTATION = st.tuples(
    st.integers(0, 6), st.integers(0, 1 << 16), st.integers(0, 64), st.binary(max_size=12)
)
SPLITS = st.lists(st.integers(1, 700), max_size=40)


class Hung(Exception):
    pass


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail (rather than hang the suite) if the block runs longer than ``seconds``."""

    def stop(signum: int, frame: object) -> None:
        raise Hung(f"still reading after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _read(data: bytes, splits: list[int], method: str = "GET") -> tuple[str, object, int, int]:
    """(outcome, value, receives after the end, bytes left unread) of reading ``data`` in
    receives of the sizes in ``splits`` (then whatever is asked)."""
    pos, ends = 0, 0
    sizes = iter(splits)
    reader = read_answer(method, limit=LIMIT)
    try:
        with within(5.0):
            want = next(reader)
            while True:
                assert 0 < want <= RECV_MAX, f"asked for {want} bytes"
                if pos >= len(data):
                    ends += 1
                    assert ends <= 1, "asked again after the end of the connection"
                    piece = b""
                else:
                    piece = data[pos : pos + min(want, next(sizes, want))]
                    pos += len(piece)
                want = reader.send(piece)
    except StopIteration as done:
        status, reason, _, body, keep = done.value
        # The status is three digits of a real HTTP/1.x status line in what was sent.
        assert re.search(rb"HTTP/1\.[0-9] %d( |\r)" % status, data), status
        return "answer", (status, reason, body, keep), ends, len(data) - pos
    except BrokenAnswer as exc:  # the reader's own errors, and nothing else
        return "error", type(exc).__name__, ends, len(data) - pos


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 100),
    ops=st.lists(MUTATION, max_size=4),
    splits=SPLITS,
)
def test_mutated_replies_are_read_or_refused_never_anything_else(
    seed: int, ops: list[tuple[int, int, int, bytes]], splits: list[int]
) -> None:
    all_seeds = seeds()
    data = _mutate(all_seeds[seed % len(all_seeds)], ops)
    outcome, value, _, unread = _read(data, splits)
    whole = _read(data, [])  # the same bytes in receives as large as asked for
    if outcome == "error" or whole[0] == "error":
        assert (outcome, value) == whole[:2], "the receive sizes changed the result"
        return
    status, reason, body, keep = value  # type: ignore[misc]
    assert (status, reason, body) == whole[1][:3], "the receive sizes changed the answer"  # type: ignore[index]
    assert len(body) <= (LIMIT if 200 <= status < 300 else ERROR_KEPT)
    # Reusable only if nothing beyond the answer was received; bytes sent after it but
    # not yet received stay on the socket, where the check before reuse (wire.Idle)
    # finds them. Received in one piece, everything was received: reusable means none.
    if whole[1][3]:  # type: ignore[index]
        assert whole[3] == 0
    if keep and not whole[1][3]:  # type: ignore[index]
        assert unread > 0


@functools.cache
def _official_agrees_on() -> list[bytes]:
    return list(seeds())


def _official(data: bytes) -> tuple[int, bytes] | None:
    """(status, body) as the official client's path reads ``data``; None if it refuses."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(data)
        theirs.shutdown(socket.SHUT_WR)
        ours.settimeout(5)
        resp = StrictResponse(ours, method="GET")
        try:
            resp.begin()

            class Wrapped:
                headers = resp.headers

                @staticmethod
                def read(amt: int) -> bytes:
                    return resp.read(amt)

            body, _ = read_body(Wrapped, ok=200 <= resp.status < 300)
        except (BrokenAnswer, http.client.HTTPException):
            return None
        return resp.status, body


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100), ops=st.lists(MUTATION, max_size=3))
def test_both_transports_read_what_they_both_accept_the_same(
    seed: int, ops: list[tuple[int, int, int, bytes]]
) -> None:
    all_seeds = _official_agrees_on()
    data = _mutate(all_seeds[seed % len(all_seeds)], ops)
    outcome, value, _, _ = _read(data, [])
    theirs = _official(data)
    if outcome == "answer" and theirs is not None:
        status, _, body, _ = value  # type: ignore[misc]
        if len(body) <= LIMIT and len(theirs[1]) <= MAX_BODY:
            assert (status, body) == theirs


def test_the_seeds_read_as_the_fake_sent_them() -> None:
    for data in seeds():
        outcome, _, _, unread = _read(data, [])
        assert outcome == "answer" and unread == 0, data[:200]
