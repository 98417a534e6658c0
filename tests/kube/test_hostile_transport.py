"""Hostile replies at the transport: an answer nobody asked for waiting on a kept
connection, answers trickled past the deadline, LISTs that never end, a task that fails in
the middle of a run, and a stop while an answer is still coming. Against the fake API
server behind the hostile relay (tests/kube/hostile.py)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from labeler.bulk import apply as bulk
from labeler.bulk import writes
from labeler.bulk.pace import Pace
from labeler.core.plan import Desired
from labeler.core.sheet import parse_label_csv
from labeler.kube import many
from labeler.kube.client import Api, for_host
from labeler.kube.errors import KubeError, Retryable
from labeler.kube.many import run_many
from labeler.kube.nodes import LabelWriter, get_node, list_node_labels
from labeler.kube.raw import list_pages
from labeler.kube.steps import Call, Steps
from tests.fakekube import FakeKube
from tests.kube.hostile import Forward, Relay, Request, Rule, Script, answer, trickle

G = "huawei.com/topotree.groupid"
EXTRA_ECHO = b'{"kind":"PartialObjectMetadata","metadata":{"name":"n0"}}'


def api_for(relay: Relay, read_timeout: float = 60.0) -> Api:
    return for_host(relay.url, request_timeout=(5.0, read_timeout))


def extra_later(req: Request, forward: Forward) -> Script:
    """The real answer, then (a moment later, in its own write) an answer nobody asked
    for: it is waiting on the connection when the next request would go out on it."""
    return [forward(req), 0.05, answer("200 OK", EXTRA_ECHO)]


def connections(relay: Relay) -> int:
    return len(relay._conns)


def test_a_connection_with_bytes_waiting_is_never_reused(fake_kube: FakeKube) -> None:
    """One thread, one request at a time (the agent's way): the pause lets the unasked
    answer arrive; the next request must go out on a new connection, and read its own."""
    for name in ("n0", "n1"):
        fake_kube.add_node(name)
    with Relay(fake_kube, [Rule("GET", "/api/v1/nodes/n0", extra_later)]) as relay:
        api = api_for(relay)
        assert get_node(api, "n0").name == "n0"
        time.sleep(0.3)
        # Not checked by name here: only the check before reuse keeps the unasked answer
        # from being read as this one.
        doc = json.loads(api.send("GET", "/api/v1/nodes/n1"))
        assert doc["metadata"]["name"] == "n1"
        assert connections(relay) == 2


def test_an_answer_glued_to_the_last_is_never_read_as_the_next(fake_kube: FakeKube) -> None:
    """Back to back on one connection from a worker of the bulk writer: an unasked answer
    glued after a large first answer is either left on the socket (where urllib3's look
    before reuse finds it and drops the connection) or read away with the first; the next
    request reads its own answer."""
    fake_kube.add_node("n0", annotations={"pad": "x" * 250_000})
    fake_kube.add_node("n1")

    def glued(req: Request, forward: Forward) -> Script:
        return [forward(req) + answer("200 OK", EXTRA_ECHO)]

    def task() -> Steps[list[str]]:
        first = json.loads((yield Call("GET", "/api/v1/nodes/n0")))
        second = json.loads((yield Call("GET", "/api/v1/nodes/n1")))  # not checked by name
        return [first["metadata"]["name"], second["metadata"]["name"]]

    with Relay(fake_kube, [Rule("GET", "/api/v1/nodes/n0", glued)]) as relay:
        results: list[Any] = []
        run_many(api_for(relay), iter([task()]), 1, results.append)
        assert results == [["n0", "n1"]]


def test_a_trickled_list_ends_at_the_deadline_and_is_retried(
    fake_kube: FakeKube,
) -> None:
    """A LIST page a few bytes at a time, each within the read timeout: the timeout bounds
    the whole answer, so the page is given up after 1 s and asked again."""
    fake_kube.seed_nodes(3)

    def slow(req: Request, forward: Forward) -> Script:
        return trickle(forward(req), 20, 0.1)

    with Relay(fake_kube, [Rule("GET", "/api/v1/nodes", slow)]) as relay:
        start = time.monotonic()
        nodes = list_node_labels(api_for(relay, read_timeout=1.0))
        took = time.monotonic() - start
    assert len(nodes) == 3
    assert 1.0 <= took < 15.0
    assert sum(r.target.startswith("/api/v1/nodes?") for r in relay.seen) == 2


def test_a_flood_of_interim_answers_ends_at_the_deadline(fake_kube: FakeKube) -> None:
    """5,000 answers 100 Continue and no real one: http.client skips them, and the whole
    answer's deadline (the read timeout) ends the wait for the last."""
    flood = answer("100 Continue", b"", "X: y")[: -len(b"Content-Length: 0\r\n\r\n")]
    rule = Rule("GET", "/api/v1/nodes/n0", lambda req, fwd: [flood + b"\r\n" * 1] * 5000)
    fake_kube.add_node("n0")
    with Relay(fake_kube, [rule]) as relay:
        api = api_for(relay, read_timeout=1.0)
        with pytest.raises(TimeoutError, match="no whole answer within the read timeout"):
            api.send("GET", "/api/v1/nodes/n0")


def test_lists_that_never_end_are_stopped(fake_kube: FakeKube) -> None:
    pages = iter(range(10**6))

    def new_token(req: Request, forward: Forward) -> Script:
        doc = {"kind": "NodeList", "metadata": {"continue": f"t{next(pages)}"}, "items": []}
        return [answer("200 OK", json.dumps(doc).encode())]

    with Relay(fake_kube, [Rule("GET", "/api/v1/nodes", new_token, times=0)]) as relay:
        api = api_for(relay)
        with pytest.raises(KubeError, match="more than 5 pages of 500"):
            list(list_pages(api, "/api/v1/nodes", resource="nodes", max_pages=5))
        assert len(relay.seen) == 5


def test_a_page_that_is_not_a_list_object_is_an_error(fake_kube: FakeKube) -> None:
    rule = Rule("GET", "/api/v1/nodes", lambda req, fwd: [answer("200 OK", b"[1, 2]")], 0)
    with Relay(fake_kube, [rule]) as relay, pytest.raises(KubeError, match="page 1 is not a list"):
        list_node_labels(api_for(relay))


def test_a_list_item_that_is_not_a_node_stops_before_any_write(fake_kube: FakeKube) -> None:
    doc = {"kind": "NodeList", "metadata": {}, "items": [{"metadata": {"name": "n", "labels": []}}]}
    rule = Rule(
        "GET", "/api/v1/nodes", lambda req, fwd: [answer("200 OK", json.dumps(doc).encode())]
    )
    with Relay(fake_kube, [rule]) as relay, pytest.raises(KubeError, match=r"labels is not a map"):
        list_node_labels(api_for(relay))


def test_a_task_that_fails_does_not_stop_the_others(fake_kube: FakeKube) -> None:
    names = fake_kube.seed_nodes(6)

    def read(name: str) -> Steps[str]:
        doc = json.loads((yield Call("GET", f"/api/v1/nodes/{name}", name=name)))
        if name == names[2]:
            raise RuntimeError("a bug in one task")
        return str(doc["metadata"]["name"])

    results: list[str] = []
    run_many(fake_kube.cluster(), iter([read(n) for n in names]), 3, results.append)
    assert sorted(results) == sorted(n for n in names if n != names[2])


def test_sigterm_while_an_answer_trickles_ends_the_run_within_the_grace(
    fake_kube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer that would take minutes (a byte every 0.2 s), and a SIGTERM: the writes
    stop within the grace, the node in flight is failed with the reason, every row counts
    once, and the exit code is SIGTERM's."""
    monkeypatch.setattr(many, "STOP_GRACE", 1.0)
    names = [f"n{i}" for i in range(4)]
    for name in names:
        fake_kube.add_node(name)
    sheet = parse_label_csv(f"nodeName,{G}\n" + "".join(f"{n},{n[1:]}\n" for n in names), "c.csv")

    def forever(req: Request, forward: Forward) -> Script:
        return trickle(forward(req) + b" " * 10_000, 1, 0.2)

    with Relay(fake_kube, [Rule("PATCH", "/api/v1/nodes/n1", forever)]) as relay:
        api = api_for(relay)
        plan = bulk.cluster_plan(api, sheet)
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        start = time.monotonic()
        report = writes.run(api, plan, pace=Pace(concurrency=2))
        took = time.monotonic() - start
        timer.cancel()
    assert took < 10.0
    assert report.interrupted == 143
    assert sum(map(len, report.rows.values())) == len(names)
    (failed,) = report.failed
    assert failed.node == "n1" and "stopped by a signal" in str(failed.error)
    assert "1 failed" in report.summary()


def test_a_retry_is_not_waited_for_once_stopping(fake_kube: FakeKube) -> None:
    """A task in its backoff when the run stops ends at once with the reason."""
    fake_kube.add_node("n0")
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/n0", status=500, retry_after=30)
    stop = threading.Event()

    def read() -> Steps[Any]:
        from labeler.kube.nodes import read_node

        try:
            return (yield from read_node("n0"))
        except KubeError as e:
            return e

    results: list[Any] = []
    threading.Timer(0.5, stop.set).start()
    start = time.monotonic()
    run_many(fake_kube.cluster(), iter([read()]), 1, results.append, stopping=stop.is_set)
    assert time.monotonic() - start < 5.0
    (result,) = results
    assert isinstance(result, KubeError) and "waiting to retry" in str(result)
    assert not isinstance(result, Retryable)


def test_a_write_answered_early_hints_then_its_answer_counts_as_written(
    fake_kube: FakeKube,
) -> None:
    """http.client takes a 103 Early Hints for the answer itself: a status no API server
    answers with, so the writer looks at the node before it says anything, and finds the
    write done."""
    fake_kube.add_node("n0")

    def hints(req: Request, forward: Forward) -> Script:
        return [
            answer("103 Early Hints", b"", "Link: </a>")[: -len(b"Content-Length: 0\r\n\r\n")]
            + b"\r\n"
            + forward(req)
        ]

    with Relay(fake_kube, [Rule("PATCH", "/api/v1/nodes/n0", hints)]) as relay:
        result = LabelWriter(api_for(relay)).reconcile("n0", Desired(set={G: "1"}))
    assert result.written
    assert fake_kube.get_node("n0")["metadata"]["labels"][G] == "1"
