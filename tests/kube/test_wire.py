"""The whole-answer transport (labeler.kube.wire) over loopback: against the fake API
server for the API's answers and faults, against a scripted socket server for the HTTP
framing the fake does not produce (chunked bodies, closed keep-alive connections), and
over TLS with a self-signed certificate made for the test."""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labeler.kube import official
from labeler.kube.client import Api, for_host
from labeler.kube.errors import Conflict, Retryable
from labeler.kube.nodes import LabelWriter, get_node, list_node_labels
from labeler.kube.raw import call_json
from labeler.kube.wire import BrokenAnswer
from labeler.plan import Desired
from tests.fakekube import FakeKube


def test_api_faults_become_typed_errors_and_retries(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    api = fake_kube.cluster()
    assert api.wire is not None
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
    with pytest.raises(BrokenAnswer):
        api.send("GET", "/api/v1/nodes/node-00000")
    assert get_node(api, "node-00000").name == "node-00000"  # the client still works


# --- a scripted HTTP server: exact bytes, several connections ------------------------


class Scripted:
    """Answers each request with the next scripted answer; ``close`` after an answer
    closes that connection. Counts the connections accepted."""

    def __init__(self, answers: list[tuple[bytes, bool]]) -> None:
        self.answers = list(answers)
        self.connections = 0
        self.closed = threading.Semaphore(0)  # released when the server closes a connection
        self.requests: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            conn, _ = self.sock.accept()
            self.connections += 1
            with contextlib.ExitStack() as stack:
                stack.callback(self.closed.release)
                stack.enter_context(conn)
                rfile = stack.enter_context(conn.makefile("rb"))
                while self.answers:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = rfile.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = next(
                        (
                            int(h.split(b":")[1])
                            for h in head.split(b"\r\n")
                            if h.lower().startswith(b"content-length:")
                        ),
                        0,
                    )
                    self.requests.append(head + rfile.read(length))
                    answer, close = self.answers.pop(0)
                    conn.sendall(answer)
                    if close:
                        break


def ok(body: bytes, *extra: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"".join(extra)
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'4;ext=1\r\n{"a"\r\n5\r\n: [1,\r\n4\r\n 2]}\r\n0\r\nX-Trailer: t\r\n\r\n'
)


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
    with pytest.raises(BrokenAnswer, match="cut off"):
        api.send("GET", "/a")
    # A write whose success status came took effect: its cut-off echo is not an error.
    assert api.send("PATCH", "/b", body=b"{}", echo=False) == b""
    assert api.send("GET", "/c") == b"{}"
    assert server.connections == 3


def test_no_answer_is_a_retryable_error() -> None:
    server = Scripted([(b"", True)] * 2 + [(ok(b"{}"), False), (b"", True), (b"", True)])
    api = for_host(server.url)
    waits: list[float] = []
    doc = call_json(lambda: api.send("GET", "/a"), verb="get", resource="a", sleep=waits.append)
    assert doc == {}
    assert len(waits) == 2
    # On the kept connection no answer could be a close racing with the request: a GET
    # is sent once more on a new connection; no answer there either is the error.
    with pytest.raises(Retryable, match="no answer"):
        call_json(lambda: api.send("GET", "/a"), verb="get", resource="a", attempts=1)
    assert server.connections == 4


@pytest.mark.parametrize("repeatable", [False, True])
def test_a_write_is_sent_again_on_a_closed_kept_connection_only_if_repeatable(
    repeatable: bool,
) -> None:
    server = Scripted([(ok(b"1"), True), (ok(b"2"), False)])
    api = for_host(server.url)
    assert api.send("GET", "/a") == b"1"
    assert server.closed.acquire(timeout=5)  # closed by the server, still kept by us
    if repeatable:
        assert api.send("PATCH", "/b", body=b"{}", repeatable=True) == b"2"
        assert server.connections == 2
    else:
        # A POST or an unguarded PATCH may have arrived before the close: not repeated
        # here (labeler.kube.errors.call decides, with backoff).
        with pytest.raises((BrokenAnswer, ConnectionError)):
            api.send("PATCH", "/b", body=b"{}")
        assert len(server.requests) == 1


class Silent:
    """Accepts connections (TLS with ``context``) and never answers."""

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.context = context
        self.held: list[socket.socket] = []
        scheme = "https" if context else "http"
        self.url = f"{scheme}://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            if self.context is not None:
                conn = self.context.wrap_socket(conn, server_side=True)
            self.held.append(conn)


def _times_out(api: Api, read_timeout: float) -> float:
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        api.send("GET", "/never")
    return time.monotonic() - start


def test_a_server_that_never_answers_times_out_at_the_read_timeout() -> None:
    server = Silent()
    api = for_host(server.url, request_timeout=(5.0, 0.3))
    assert api.wire is not None
    took = _times_out(api, 0.3)
    assert 0.25 <= took < 5.0
    # The same on a connection that already answered (the timeout is kept per socket).
    server2 = Scripted([(ok(b"{}"), False)])
    api = for_host(server2.url, request_timeout=(5.0, 0.3))
    assert api.send("GET", "/a") == b"{}"
    assert 0.25 <= _times_out(api, 0.3) < 5.0


# --- TLS -----------------------------------------------------------------------------


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on loopback with a self-signed certificate for 127.0.0.1."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test's certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            *subject,
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = json.dumps({"path": self.path, "auth": self.headers["Authorization"]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}", cert
    httpd.shutdown()
    httpd.server_close()


def _tls_api(url: str, **settings: Any) -> Api:
    cfg = official.configuration().Configuration(host=url)
    cfg.api_key = {"authorization": "t0ken"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    for k, v in settings.items():
        setattr(cfg, k, v)
    return Api(cfg)


def test_a_tls_server_that_never_answers_times_out(tls_server: tuple[str, Path]) -> None:
    _, cert = tls_server
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, cert.with_name("key.pem"))
    server = Silent(ctx)
    api = _tls_api(server.url, ssl_ca_cert=str(cert))
    api = Api(api.configuration, request_timeout=(5.0, 0.3))
    assert 0.25 <= _times_out(api, 0.3) < 5.0


def test_tls_verifies_the_server_with_the_configured_ca(tls_server: tuple[str, Path]) -> None:
    url, cert = tls_server
    api = _tls_api(url, ssl_ca_cert=str(cert))
    for i in range(2):
        answer = json.loads(api.send("GET", f"/v{i}"))
        assert answer == {"path": f"/v{i}", "auth": "Bearer t0ken"}
    unverified = _tls_api(url, verify_ssl=False)
    assert json.loads(unverified.send("GET", "/any"))["path"] == "/any"
    untrusted = _tls_api(url)  # the system CAs do not know the test's certificate
    with pytest.raises(ssl.SSLError):
        untrusted.send("GET", "/v")
