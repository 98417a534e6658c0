"""A loopback server in front of the fake API server that answers like a broken proxy, load
balancer or hostile endpoint would, for the requests a rule takes: every other request is
passed on to the fake and its answer relayed (re-framed with Content-Length), so a real
``apply`` runs against real API semantics with exactly the hostile bytes where we want them.

A rule matches a method and a path pattern, takes a number of requests (or every one), and
answers with a script: bytes to send, pauses (a trickle), a close. It may pass the request
on first (``forward``), so "the write happened, the answer is garbage" can be said too.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.fakekube import FakeKube

CLOSE = object()  # in a script: close the connection after what came before


@dataclass
class Request:
    method: str
    target: str  # path and query, as sent
    headers: dict[str, str]
    body: bytes


Forward = Callable[[Request], bytes]
Script = Iterable[Any]  # bytes | float (seconds to pause) | CLOSE
Reply = Callable[[Request, Forward], Script]


@dataclass
class Rule:
    method: str
    path: str  # a regular expression matched against the path (no query)
    reply: Reply
    times: int = 1  # requests it takes; 0: every one
    taken: int = field(default=0)

    def takes(self, req: Request) -> bool:
        if req.method != self.method or (self.times and self.taken >= self.times):
            return False
        return re.fullmatch(self.path, req.target.split("?", 1)[0]) is not None


def answer(status: str, body: bytes = b"", *fields: str) -> bytes:
    """An answer's bytes: ``status`` is the status line's text after ``HTTP/1.1 ``."""
    head = "".join(f"{f}\r\n" for f in fields)
    if not any(f.lower().startswith(("content-length:", "transfer-encoding:")) for f in fields):
        head += f"Content-Length: {len(body)}\r\n"
    return f"HTTP/1.1 {status}\r\n{head}\r\n".encode("latin-1") + body


def says(data: bytes) -> Reply:
    """Answer with ``data``; the request never reaches the API server."""
    return lambda req, forward: [data]


def passed_on(data: bytes) -> Reply:
    """Pass the request on (the write happens), then answer with ``data``."""

    def reply(req: Request, forward: Forward) -> Script:
        forward(req)
        return [data]

    return reply


def trickle(data: bytes, piece: int, pause: float) -> Iterator[Any]:
    for start in range(0, len(data), piece):
        yield data[start : start + piece]
        yield pause


class Relay:
    """The hostile server: ``rules`` are looked at in order for every request."""

    def __init__(self, fake: FakeKube, rules: list[Rule] | None = None) -> None:
        self.fake = fake
        self.rules = list(rules or [])
        self.lock = threading.Lock()
        self.seen: list[Request] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._conns: list[socket.socket] = []
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def kubeconfig(self, path: Path) -> Path:
        config = self.fake.kubeconfig()
        config["clusters"][0]["cluster"]["server"] = self.url
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def stop(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):
            self.sock.close()
        for conn in list(self._conns):
            with contextlib.suppress(OSError):
                conn.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _rule_for(self, req: Request) -> Rule | None:
        with self.lock:
            self.seen.append(req)
            for rule in self.rules:
                if rule.takes(req):
                    rule.taken += 1
                    return rule
        return None

    def _serve(self, conn: socket.socket) -> None:
        upstream = http.client.HTTPConnection(self.fake.host, self.fake.port, timeout=30)

        def forward(req: Request) -> bytes:
            drop = ("host", "content-length")  # http.client sets the length of this body
            headers = {k: v for k, v in req.headers.items() if k.lower() not in drop}
            upstream.request(req.method, req.target, body=req.body or None, headers=headers)
            resp = upstream.getresponse()
            body = resp.read()
            kept = [
                f"{k}: {v}"
                for k, v in resp.getheaders()
                if k.lower() not in ("content-length", "transfer-encoding", "connection")
            ]
            return answer(f"{resp.status} {resp.reason}", body, *kept)

        with contextlib.suppress(OSError, http.client.HTTPException), conn:
            stack = contextlib.ExitStack()
            stack.callback(upstream.close)
            rfile = stack.enter_context(conn.makefile("rb"))
            while (req := _read_request(rfile)) is not None:
                rule = self._rule_for(req)
                script: Script = [forward(req)] if rule is None else rule.reply(req, forward)
                for item in script:
                    if item is CLOSE:
                        return
                    if isinstance(item, float | int):
                        time.sleep(item)
                    else:
                        conn.sendall(item)
            stack.close()


def _read_request(rfile: Any) -> Request | None:
    first = rfile.readline()
    if not first:
        return None
    method, target, _ = first.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (line := rfile.readline()) not in (b"\r\n", b""):
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip()] = value.strip()
    length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), 0))
    return Request(method, target, headers, rfile.read(length) if length else b"")
