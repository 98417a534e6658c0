"""The one transport (labeler.kube.client.Api on the official client's urllib3 pool) over
loopback: against the fake API server for the API's answers and faults, against a scripted
socket server for what the fake does not produce (chunked bodies, closed keep-alive
connections, cut-off, oversized and trickled answers), and over TLS with a self-signed
certificate made for the test. What is checked is what a caller relies on: the body of a
2xx answer, a typed error otherwise, and every request ended by its deadline."""

from __future__ import annotations

import json
import ssl
import threading
import time
from pathlib import Path

import pytest
import urllib3

from labeler.base.httpclient import AnswerTooLarge
from labeler.core.plan import Desired
from labeler.kube.answer import ERROR_KEPT, MAX_OBJECT, BadAnswer, WrongAnswer, check_object
from labeler.kube.client import Api, for_host
from labeler.kube.errors import ApiStatus, Conflict, KubeError, Retryable, translate
from labeler.kube.nodes import LabelWriter, get_node, list_node_labels
from labeler.kube.raw import call_json
from tests.fakekube import FakeKube
from tests.kube.servers import CHUNKED, Scripted, Silent, ok, tls_api, trickled


def test_api_faults_become_typed_errors_and_retries(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    api = fake_kube.cluster()
    waits: list[float] = []
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/n1", status=429, retry_after=3)
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/n1", status=500)
    doc = call_json(
        lambda: api.send("GET", "/api/v1/nodes/n1"), verb="get", resource="n1", sleep=waits.append
    )
    assert doc["metadata"]["name"] == "n1"
    assert len(waits) == 2 and waits[0] >= 3.0  # Retry-After read from the answer's headers
    fake_kube.faults.add(method="PATCH", status=409)
    with pytest.raises(Conflict):
        call_json(
            lambda: api.send("PATCH", "/api/v1/nodes/n1", body=b"{}"), verb="patch", resource="n1"
        )
    # A 409 on a label write is re-planned from a fresh read, not an error.
    fake_kube.faults.add(method="PATCH", status=409)
    result = LabelWriter(api).reconcile("n1", Desired(set={"x.io/a": "1"}))
    assert result.written and result.attempts == 2
    assert fake_kube.get_node("n1")["metadata"]["labels"]["x.io/a"] == "1"


def test_cut_off_and_dropped_answers_are_retried(fake_kube: FakeKube) -> None:
    fake_kube.seed_nodes(30)
    api = fake_kube.cluster()
    fake_kube.faults.add(method="GET", path="/api/v1/nodes", truncate=True)
    fake_kube.faults.add(method="GET", path="/api/v1/nodes", drop=True)
    assert len(list_node_labels(api, page_size=7)) == 30
    assert fake_kube.count("list") == 5 + 2  # 5 pages, two of them asked twice
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/node-00000", truncate=True)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        api.send("GET", "/api/v1/nodes/node-00000")
    assert get_node(api, "node-00000").name == "node-00000"  # the client still works


def test_chunked_answers_and_keep_alive() -> None:
    server = Scripted([(CHUNKED, False), (ok(b'{"b": 2}'), False), (CHUNKED, False)])
    api = for_host(server.url)
    assert json.loads(api.send("GET", "/x")) == {"a": [1, 2]}
    assert json.loads(api.send("PATCH", "/y", body=b'{"k": "v"}')) == {"b": 2}
    assert json.loads(api.send("GET", "/z")) == {"a": [1, 2]}
    assert server.connections == 1
    patch = server.requests[1]
    assert patch.startswith(b"PATCH /y HTTP/1.1\r\n")
    assert b"Content-Length: 10\r\n" in patch and patch.endswith(b'\r\n\r\n{"k": "v"}')


def test_a_connection_closed_by_the_server_is_replaced() -> None:
    server = Scripted(
        [
            (ok(b"1"), True),  # the server closes the idle keep-alive connection
            (ok(b"2", b"Connection: close\r\n"), True),  # or says it will
            (ok(b"3"), False),
        ]
    )
    api = for_host(server.url)
    answers = []
    for i in range(3):
        answers.append(api.send("GET", f"/{i}"))
        if i < 2:  # idle until the close has happened (not racing with it)
            assert server.closed.acquire(timeout=5)
    assert answers == [b"1", b"2", b"3"]
    assert server.connections == 3


def test_a_cut_off_answer_raises_and_the_next_request_reconnects() -> None:
    cut = ok(b'{"long": "answer"}')[:-5]
    server = Scripted([(cut, True), (cut, True), (ok(b"{}"), False)])
    api = for_host(server.url)
    with pytest.raises(urllib3.exceptions.ProtocolError, match="IncompleteRead"):
        api.send("GET", "/a")
    # A write whose success status came took effect: its cut-off echo is not an error.
    assert api.send("PATCH", "/b", body=b"{}", echo=False) == b""
    assert api.send("GET", "/c") == b"{}"
    assert server.connections == 3


def test_no_answer_is_a_retryable_error() -> None:
    server = Scripted([(b"", True)] * 2 + [(ok(b"{}"), False)] + [(b"", True)] * 2)
    api = for_host(server.url)
    waits: list[float] = []
    doc = call_json(lambda: api.send("GET", "/a"), verb="get", resource="a", sleep=waits.append)
    assert doc == {}
    assert len(waits) == 1  # a GET that got no answer is sent once more by urllib3 at once
    # On the kept connection no answer could be a close racing with the request: a GET
    # is sent once more on a new connection; no answer there either is the error.
    with pytest.raises(Retryable, match=r"no answer from the API server at 127\.0\.0\.1"):
        call_json(lambda: api.send("GET", "/a"), verb="get", resource="a", attempts=1)
    assert server.connections == 4


def test_a_write_is_never_sent_twice_by_the_transport() -> None:
    # The server closes the kept connection as the write arrives, without a word: the
    # race between its idle close and our request that no check before reuse can see.
    # Whether the write arrived is not known: the transport does not send it again (the
    # label writer looks at the node first, labeler.kube.nodes).
    server = Scripted([(ok(b"1"), False), (b"", True), (ok(b"2"), False)])
    api = for_host(server.url)
    assert api.send("GET", "/a") == b"1"
    with pytest.raises(urllib3.exceptions.HTTPError):
        api.send("PATCH", "/b", body=b"{}")
    assert len(server.requests) == 2
    assert api.send("PATCH", "/b", body=b"{}") == b"2"  # asked again, on a new connection


def _times_out(api: Api, read_timeout: float) -> float:
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        api.send("GET", "/never")
    return time.monotonic() - start


def test_a_server_that_never_answers_times_out_at_the_read_timeout() -> None:
    server = Silent()
    api = for_host(server.url, request_timeout=(5.0, 0.3))
    took = _times_out(api, 0.3)
    assert 0.25 <= took < 5.0
    # The same on a connection that already answered (the timeout is kept per socket).
    server2 = Scripted([(ok(b"{}"), False)])
    api = for_host(server2.url, request_timeout=(5.0, 0.3))
    assert api.send("GET", "/a") == b"{}"
    assert 0.25 <= _times_out(api, 0.3) < 5.0


def test_a_tls_server_that_never_answers_times_out(tls_server: tuple[str, Path]) -> None:
    _, cert = tls_server
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, cert.with_name("key.pem"))
    server = Silent(ctx)
    api = tls_api(server.url, ssl_ca_cert=str(cert))
    api = Api(api.configuration, request_timeout=(5.0, 0.3))
    assert 0.25 <= _times_out(api, 0.3) < 5.0


def test_tls_verifies_the_server_with_the_configured_ca(tls_server: tuple[str, Path]) -> None:
    url, cert = tls_server
    api = tls_api(url, ssl_ca_cert=str(cert))
    for i in range(2):
        answer = json.loads(api.send("GET", f"/v{i}"))
        assert answer == {"path": f"/v{i}", "auth": "Bearer t0ken"}
    unverified = tls_api(url, verify_ssl=False)  # insecure-skip-tls-verify: works, warned
    with pytest.warns(urllib3.exceptions.InsecureRequestWarning):
        assert json.loads(unverified.send("GET", "/any"))["path"] == "/any"
    untrusted = tls_api(url)  # the system CAs do not know the test's certificate
    with pytest.raises(urllib3.exceptions.MaxRetryError, match="CERTIFICATE_VERIFY_FAILED"):
        untrusted.send("GET", "/v")


def test_an_answer_trickled_within_each_read_timeout_ends_at_the_deadline() -> None:
    """A byte every 50 ms, each well within the read timeout: the timeout bounds the whole
    answer (head included), so the request ends at it, not when the answer would."""
    data = ok(b"x" * 200)
    server = Scripted([(trickled(data, 0.05), False)])
    api = for_host(server.url, request_timeout=(5.0, 0.5))
    # Each byte comes well within 0.5 s: only the whole answer's deadline can end it.
    with pytest.raises(TimeoutError, match="within the read timeout"):
        api.send("GET", "/slow")


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_a_body_over_the_cap_is_refused_while_it_streams(framing: str) -> None:
    """A body over what an answer may weigh (one object: MAX_OBJECT) is refused as soon as
    that is known, before it is all read: from Content-Length, or after the cap."""
    size = MAX_OBJECT + 1
    if framing == "length":
        head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size
        answer = head  # the body never comes: refused from the length alone
    else:
        piece = b"x" * 65536
        chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
        answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * (
            size // len(piece) + 1
        )
    server = Scripted([(answer, True)])
    api = for_host(server.url, request_timeout=(5.0, 10.0))
    with pytest.raises(AnswerTooLarge, match="more than"):
        api.send("GET", "/api/v1/nodes/n1", name="n1")
    err = translate(AnswerTooLarge("a body of more than 1 bytes"), "get", "nodes/n1")
    assert not err.retryable and "too large" in str(err)


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_an_error_body_is_kept_only_as_far_as_a_message_needs(framing: str) -> None:
    body = b'{"message": "' + b"x" * (10 << 20) + b'"}'
    if framing == "length":
        data = b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    else:
        data = b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n"
        data += b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    server = Scripted([(data, False), (ok(b"{}"), False)])
    api = for_host(server.url)
    with pytest.raises(ApiStatus) as caught:
        api.send("GET", "/a")
    assert (caught.value.status, caught.value.reason, len(caught.value.body)) == (
        500,
        "Oops",
        ERROR_KEPT,
    )
    assert api.send("GET", "/b") == b"{}"
    assert server.connections == 2  # the rest of the error was not read: connection closed


def test_the_echo_of_another_object_is_refused_and_its_connection_dropped() -> None:
    other = ok(b'{"kind":"Node","metadata":{"name":"n2"}}')
    server = Scripted([(other, False), (ok(b'{"metadata":{"name":"n1"}}'), False)])
    api = for_host(server.url)
    with pytest.raises(WrongAnswer, match="not 'n1'"):
        api.send("PATCH", "/api/v1/nodes/n1", body=b"{}", name="n1", echo=False)
    err = translate(WrongAnswer("the answer holds object 'n2', not 'n1'"), "patch", "nodes/n1")
    assert isinstance(err, Retryable) and "not the API server's" in str(err)
    assert api.send("GET", "/api/v1/nodes/n1", name="n1")
    assert server.connections == 2


@pytest.mark.parametrize("status", [200, 500])
def test_an_answer_that_does_not_say_where_it_ends_is_refused_at_once(status: int) -> None:
    """No Content-Length, not chunked (or a length http.client cannot read, as ``0x2``):
    only the close would end it, and the connection stays open. The API server always
    frames its answers, so this is refused at once, not waited for until the deadline."""
    server = Scripted(
        [
            (b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\n\r\n{}" % status, False),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\n{}", False),
        ]
    )
    api = for_host(server.url, request_timeout=(5.0, 30.0))
    for _ in range(2):  # waited for, it would have been the deadline's TimeoutError
        with pytest.raises(BadAnswer, match="no Content-Length and not chunked") as caught:
            api.send("GET", "/a")
        err = translate(caught.value, "get", "nodes/n1")
        assert isinstance(err, Retryable) and "not the API server's" in str(err)


@pytest.mark.parametrize("status", [101, 199, 204, 301, 302, 304, 307, 399, 418, 600, 999])
def test_only_a_2xx_status_is_success(status: int) -> None:
    if status == 204:  # a 2xx: its (empty) body is the answer; the connection stays usable
        server = Scripted([(b"HTTP/1.1 204 X\r\n\r\n", False), (ok(b"{}"), False)])
        api = for_host(server.url)
        assert api.send("GET", "/a") == b""
        assert api.send("GET", "/b") == b"{}"
        assert server.connections == 1
        return
    head = b"HTTP/1.1 %d X\r\nContent-Length: 2\r\n\r\n{}" % status
    server = Scripted([(head, True)])
    api = for_host(server.url)
    with pytest.raises(ApiStatus) as caught:
        api.send("GET", "/a")
    assert caught.value.status == status
    err = translate(caught.value, "get", "nodes/n1")
    assert isinstance(err, KubeError) and not err.retryable


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


@pytest.mark.parametrize("body", [b"", b"{}"])
def test_a_kept_connection_serves_the_next_request_after_any_length_of_body(body: bytes) -> None:
    server = Scripted([(ok(body), False), (ok(b"[]"), False)])
    api = for_host(server.url)
    assert api.send("GET", "/a") == body
    assert api.send("GET", "/b") == b"[]"
    assert server.connections == 1


def test_many_threads_share_the_pool_and_each_reads_its_own_answer(fake_kube: FakeKube) -> None:
    names = fake_kube.seed_nodes(40)
    api = fake_kube.cluster()
    got: dict[str, str] = {}

    def read(name: str) -> None:
        got[name] = json.loads(api.send("GET", f"/api/v1/nodes/{name}", name=name))["metadata"][
            "name"
        ]

    threads = [threading.Thread(target=read, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == {n: n for n in names}
