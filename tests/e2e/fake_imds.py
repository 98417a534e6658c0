"""A loopback stand-in for OCI IMDS, one per test, serving a different host per node.

Each node gets its own base URL, ``{url}/{node}``, so one server answers for many agents:
``GET {url}/{node}/opc/v2/host/rdmaTopologyData`` returns what ``set()`` configured for
that node and path (JSON, a raw body, a status code, after a delay). Anything not
configured answers 404, as IMDS does for a missing document. Requests are journaled with
their headers so tests can check what the agent sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RDMA = "/opc/v2/host/rdmaTopologyData"
HOST = "/opc/v2/host"
INSTANCE = "/opc/v2/instance/"


@dataclass
class Answer:
    status: int = 200
    body: Any = None  # dict/list → JSON; str → sent as is; None → empty body
    delay: float = 0.0
    trickle: float = 0.0  # seconds between bytes of the body (a server that dribbles)
    endless: bool = False  # a chunked body that never ends


@dataclass(frozen=True)
class Seen:
    node: str
    path: str
    headers: dict[str, str]


def rdma_doc(island: str, block: str, local: str, host: str) -> dict[str, str]:
    """An rdmaTopologyData document with OCID-like IDs built from short names."""
    return {
        "customerHPCIslandId": f"ocid1.hpcisland.oc1.iad.{island:a>60}",
        "customerNetworkBlock": f"ocid1.computenetworkblock.oc1.iad.{block:b>60}",
        "customerLocalBlock": f"ocid1.computelocalblock.oc1.iad.{local:c>60}",
        "customerHostId": f"ocid1.computebaremetalhost.oc1.iad.{host:d>60}",
    }


class FakeImds:
    def __init__(self) -> None:
        self._answers: dict[tuple[str, str], Answer] = {}
        self._lock = threading.Lock()
        self.closed = False
        self.seen: list[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                node, _, rest = self.path.lstrip("/").partition("/")
                path = "/" + rest.split("?", 1)[0]
                with fake._lock:
                    fake.seen.append(Seen(node, path, dict(self.headers.items())))
                    answer = fake._answers.get((node, path), Answer(404, "Not Found"))
                if answer.delay:
                    time.sleep(answer.delay)
                body = answer.body
                if isinstance(body, dict | list):
                    data = json.dumps(body).encode()
                    ctype = "application/json"
                else:
                    data = (body or "").encode()
                    ctype = "text/plain"
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", ctype)
                    if answer.endless:
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        chunk = b"[" * 65536
                        while not fake.closed:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        return
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if answer.trickle:
                        for i in range(len(data)):
                            if fake.closed:
                                return
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(answer.trickle)
                    else:
                        self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeImds:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed = True
        self._server.shutdown()
        self._server.server_close()

    def url_for(self, node: str) -> str:
        return f"{self.url}/{node}"

    def set(self, node: str, path: str, answer: Answer | dict[str, Any]) -> None:
        with self._lock:
            self._answers[(node, path)] = (
                answer if isinstance(answer, Answer) else Answer(200, answer)
            )

    def requests_for(self, node: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.node == node]
