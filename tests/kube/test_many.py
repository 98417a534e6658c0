"""Many pieces of API work at once (labeler.kube.many, a bounded pool of threads over the
one connection pool): the same answers, errors and retries as one request at a time, over
plain TCP and TLS, and a stop that starts no new task."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from labeler.core.plan import Desired, Writer
from labeler.kube.client import for_host
from labeler.kube.errors import KubeError, retrying
from labeler.kube.many import run_many
from labeler.kube.nodes import METADATA_ONE, LabelWriter, WriteResult, labels_of
from labeler.kube.steps import Call, Steps
from tests.fakekube import FakeKube
from tests.kube.servers import CHUNKED, Scripted, Silent, ok, tls_api


def fetch(path: str, attempts: int = 1) -> Steps[Any]:
    """GET ``path`` with retries; the parsed answer, or the error as the result."""

    def attempt() -> Steps[Any]:
        return json.loads((yield Call("GET", path)))

    try:
        return (yield from retrying(attempt, verb="get", resource=path, attempts=attempts))
    except KubeError as e:
        return e


def gather(api: Any, tasks: list[Steps[Any]], width: int, **kw: Any) -> list[Any]:
    results: list[Any] = []
    run_many(api, iter(tasks), width, results.append, **kw)
    return results


def test_answers_of_every_framing_on_one_kept_connection() -> None:
    server = Scripted([(CHUNKED, False), (ok(b'{"b": 2}'), False), (CHUNKED, False)])
    api = for_host(server.url)
    results = gather(api, [fetch("/x"), fetch("/y"), fetch("/z")], width=1)
    assert results == [{"a": [1, 2]}, {"b": 2}, {"a": [1, 2]}]
    assert server.connections == 1
    assert [r.split(b" ")[1] for r in server.requests] == [b"/x", b"/y", b"/z"]


def test_label_writes_with_faults_match_one_at_a_time(fake_kube: FakeKube) -> None:
    """429 with Retry-After, 500, 409 (re-read, re-plan), a dropped answer (the lost-reply
    check) and a cut-off one, spread over 40 nodes written 8 at a time."""
    names = fake_kube.seed_nodes(40)
    api = fake_kube.cluster()
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/node-00003", status=429, retry_after=1)
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/node-00005", status=500)
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/node-00007", status=409)
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/node-00011", drop_reply=True)
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/node-00013", truncate=True)
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/node-00017", status=422)
    writer = LabelWriter(api)
    desired = Desired(set={"x.io/a": "1"}, writer=Writer.BULK)

    def write(name: str) -> Steps[WriteResult | Exception]:
        try:
            return (yield from writer.steps(labels_of(fake_kube.get_node(name)), desired))
        except KubeError as e:
            return e

    start = time.monotonic()
    results = gather(api, [write(n) for n in names], width=8)
    assert time.monotonic() - start >= 1.0  # the Retry-After was waited for
    by_node = {
        (r.node if isinstance(r, WriteResult) else r.resource.split("/")[1]): r for r in results
    }
    assert len(by_node) == 40
    failed = {n for n, r in by_node.items() if isinstance(r, Exception)}
    assert failed == {"node-00017"}  # 422 is not retried
    assert by_node["node-00007"].attempts == 2  # re-planned after the 409
    for name in names:
        labels = fake_kube.get_node(name)["metadata"]["labels"]
        assert (labels.get("x.io/a") == "1") == (name != "node-00017")
    assert fake_kube.count("patch") == 40 + 3  # 429, 500, 409 sent again; lost replies not
    # The echo of a write is not read: the server is asked to send back the metadata only.
    assert {r.accept for r in fake_kube.journal if r.method == "PATCH"} == {METADATA_ONE}


def test_tls_many_requests_and_answers_longer_than_a_record(
    tls_server: tuple[str, Path],
) -> None:
    url, cert = tls_server
    api = tls_api(url, ssl_ca_cert=str(cert))
    paths = [f"/big{i}" if i % 3 == 0 else f"/v{i}" for i in range(12)]
    results = gather(api, [fetch(p) for p in paths], width=3)
    assert sorted(r["path"] for r in results) == sorted(paths)
    assert all(r["auth"] == "Bearer t0ken" for r in results)
    assert all(len(r.get("pad", "")) == 100_000 for r in results if r["path"].startswith("/big"))


def test_an_untrusted_tls_server_is_an_error_for_each_task(tls_server: tuple[str, Path]) -> None:
    url, _ = tls_server
    results = gather(tls_api(url), [fetch("/a"), fetch("/b")], width=2)
    assert all(isinstance(r, KubeError) and r.retryable for r in results)
    assert all("CERTIFICATE_VERIFY_FAILED" in str(r) for r in results)


def test_a_server_that_never_answers_times_out_at_the_read_timeout() -> None:
    api = for_host(Silent().url, request_timeout=(5.0, 0.3))
    start = time.monotonic()
    results = gather(api, [fetch("/a"), fetch("/b")], width=2)
    assert 0.25 <= time.monotonic() - start < 5.0
    assert all(isinstance(r, KubeError) and "read timeout (0.3 s)" in str(r) for r in results)


def test_a_kept_connection_the_server_closed_is_replaced() -> None:
    server = Scripted([(ok(b"1"), True), (ok(b"2"), True), (ok(b"3"), False)])
    api = for_host(server.url)
    assert gather(api, [fetch("/a", attempts=2), fetch("/b", 2), fetch("/c", 2)], 1) == [1, 2, 3]
    assert server.connections == 3


def test_no_new_task_starts_once_stopping(fake_kube: FakeKube) -> None:
    names = fake_kube.seed_nodes(20)
    api = fake_kube.cluster()
    results: list[Any] = []
    tasks = (fetch(f"/api/v1/nodes/{n}") for n in names)
    run_many(api, tasks, 2, results.append, stopping=lambda: len(results) >= 3)
    # The ones under way (and those done before the stop was seen) finished; no other started.
    assert 3 <= len(results) <= 8
    assert all(isinstance(r, dict) for r in results)
    assert fake_kube.count("get") == len(results)


@pytest.mark.parametrize("width", [1, 4])
def test_one_thread_or_several_give_the_same_results(fake_kube: FakeKube, width: int) -> None:
    fake_kube.seed_nodes(6)
    api = fake_kube.cluster()
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/node-00002", status=500)
    paths = [f"/api/v1/nodes/node-{i:05d}" for i in range(6)]
    results = gather(api, [fetch(p, attempts=2) for p in paths], width)
    assert sorted(r["metadata"]["name"] for r in results) == [p.rsplit("/", 1)[1] for p in paths]


def test_a_server_that_is_not_there_fails_each_task_after_its_retries() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = for_host(f"http://127.0.0.1:{port}")
    results = gather(api, [fetch(f"/{i}", attempts=2) for i in range(5)], width=3)
    assert len(results) == 5
    assert all(isinstance(r, KubeError) and "Connection refused" in str(r) for r in results)
    assert all("gave up after 2 attempts" in str(r) for r in results)
