"""Request journal and fault injection, both thread-safe."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Record:
    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    body: Any
    status: int  # 0 when the connection was dropped by a fault
    time: float
    verb: str  # Kubernetes audit verb: get, list, watch, create, update, patch, delete, ...
    accept: str | None = None  # the request's Accept header, as sent


def classify(method: str, path: str, query: dict[str, str], is_collection: bool | None) -> str:
    """Audit verbs (https://kubernetes.io/docs/reference/access-authn-authz/authorization/
    #determine-the-request-verb): GET on a collection is list, or watch with watch=true."""
    m = method.upper()
    if m == "GET" or m == "HEAD":
        if is_collection:
            return "watch" if query.get("watch") in ("true", "1") else "list"
        return "get"
    if m == "POST":
        return "create"
    if m == "PUT":
        return "update"
    if m == "PATCH":
        return "patch"
    if m == "DELETE":
        return "deletecollection" if is_collection else "delete"
    return m.lower()


class Journal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[Record] = []

    def add(self, rec: Record) -> None:
        with self._lock:
            self._records.append(rec)

    @property
    def records(self) -> list[Record]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def take(self) -> list[Record]:
        """The records so far, removed: a long run reads them in turns, with flat memory."""
        with self._lock:
            taken, self._records = self._records, []
        return taken

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r.verb] = out.get(r.verb, 0) + 1
        return out


@dataclass
class Fault:
    method: str | None
    path: re.Pattern[str]
    status: int | None = None
    retry_after: int | None = None
    delay: float = 0.0
    drop: bool = False
    message: str | None = None
    remaining: int | None = None  # None: forever
    truncate: bool = False  # answer for real, but close after half the body
    drop_reply: bool = False  # carry the request out, then close without answering
    hold: threading.Event | None = None  # the request waits until this is set (at most 10 s)
    hits: int = field(default=0)


class Faults:
    """Injected failures, matched in the order added; each has a remaining count.

    `path` is a regular expression matched against the whole URL path (no query string).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(
        self,
        method: str | None = None,
        path: str = ".*",
        status: int | None = None,
        retry_after: int | None = None,
        times: int | None = 1,
        delay: float = 0.0,
        drop: bool = False,
        message: str | None = None,
        truncate: bool = False,
        drop_reply: bool = False,
        hold: threading.Event | None = None,
    ) -> Fault:
        f = Fault(
            method.upper() if method else None,
            re.compile(path),
            status,
            retry_after,
            delay,
            drop,
            message,
            times,
            truncate=truncate,
            drop_reply=drop_reply,
            hold=hold,
        )
        with self._lock:
            self._faults.append(f)
        return f

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def match(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for f in self._faults:
                if f.remaining is not None and f.remaining <= 0:
                    continue
                if f.method and f.method != method.upper():
                    continue
                if not f.path.fullmatch(path):
                    continue
                if f.remaining is not None:
                    f.remaining -= 1
                f.hits += 1
                return f
        return None

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for f in self._faults if f.remaining is None or f.remaining > 0)


def now() -> float:
    return time.time()


class Connections:
    """The server's open client connections, and which of them carry a watch (by the
    resource's plural), so a test can break them as a network would."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[socket.socket, str] = {}  # connection -> watched plural, or ""

    def opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._open[conn] = ""

    def watching(self, conn: socket.socket, plural: str) -> None:
        with self._lock:
            if conn in self._open:
                self._open[conn] = plural

    def closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.pop(conn, None)

    def cut(self, plural: str | None = None, *, watches_only: bool = True) -> int:
        """Shut down the matching connections at once (no last chunk, no FIN handshake
        left to the handler); how many were cut."""
        with self._lock:
            hit = [
                c
                for c, watched in self._open.items()
                if (watched or not watches_only) and plural in (None, watched)
            ]
        for conn in hit:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        return len(hit)
