"""Servers on loopback for the transport tests: exact bytes from a script, silence, and
HTTPS with a certificate made for the test."""

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
from labeler.kube.client import Api

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
            # A client that went away mid-answer ends its connection, not the server.
            with contextlib.suppress(OSError), contextlib.ExitStack() as stack:
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
                    if isinstance(answer, Trickled):
                        answer.send(conn)
                    else:
                        conn.sendall(answer)
                    if close:
                        break


class Trickled(bytes):
    """A scripted answer sent a byte at a time, ``pause`` seconds apart (until the client
    goes away)."""

    pause: float

    def send(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            for i in range(len(self)):
                conn.sendall(self[i : i + 1])
                time.sleep(self.pause)


def trickled(data: bytes, pause: float) -> Trickled:
    answer = Trickled(data)
    answer.pause = pause
    return answer


def ok(body: bytes, *extra: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"".join(extra)
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'4;ext=1\r\n{"a"\r\n5\r\n: [1,\r\n4\r\n 2]}\r\n0\r\nX-Trailer: t\r\n\r\n'
)


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


# --- TLS -----------------------------------------------------------------------------


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
            answer = {"path": self.path, "auth": self.headers["Authorization"]}
            if self.path.startswith("/big"):  # more than one TLS record (16 KiB)
                answer["pad"] = "x" * 100_000
            body = json.dumps(answer).encode()
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


def tls_api(url: str, **settings: Any) -> Api:
    cfg = official.configuration().Configuration(host=url)
    cfg.api_key = {"authorization": "t0ken"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    for k, v in settings.items():
        setattr(cfg, k, v)
    return Api(cfg)
