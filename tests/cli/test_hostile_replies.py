"""Hostile replies on the write path, through ``topology-labeler apply`` as a
user runs it, on the one transport (the official client's urllib3 pool).

A loopback server (tests/kube/hostile.py) sits in front of the fake API server and answers
one kind of bad reply where a rule says; everything else is the fake's real answer. For
each reply: the run ends with its summary and the right exit code, the summary counts every
row once, no node gets another node's labels, no node is reported written that was not,
and nothing is printed in bulk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from labeler.cli import main
from tests.fakekube import FakeKube
from tests.kube.hostile import (
    Forward,
    Relay,
    Reply,
    Request,
    Rule,
    Script,
    answer,
    passed_on,
    says,
    trickle,
)

G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"
NODES = [f"n{i}" for i in range(6)]
N3 = r"/api/v1/nodes/n3"
ANY_NODE = r"/api/v1/nodes/n\d"
LIST = r"/api/v1/nodes"
STATUS_409 = json.dumps(
    {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Operation cannot be fulfilled on nodes "n3": the object has been modified',
        "reason": "Conflict",
        "code": 409,
    }
).encode()
EXTRA = answer("200 OK", b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}')


def other_node(name: str) -> Reply:
    """Pass the request on, then answer with node ``name`` as read now."""

    def reply(req: Request, forward: Forward) -> Script:
        forward(req)
        return [forward(Request("GET", f"/api/v1/nodes/{name}", req.headers, b""))]

    return reply


def then_extra(separately: bool) -> Reply:
    """The real answer followed by an answer nobody asked for."""

    def reply(req: Request, forward: Forward) -> Script:
        real = forward(req)
        return [real, EXTRA] if separately else [real + EXTRA]

    return reply


def huge_status(size: int) -> bytes:
    status = {"kind": "Status", "code": 500, "message": "x" * size, "reason": "InternalError"}
    return answer("500 Internal Server Error", json.dumps(status).encode())


@dataclass
class Case:
    rules: Callable[[FakeKube], list[Rule]]
    code: int
    summary: str  # the start of the summary line, "" = checked by ``written`` only
    written: tuple[str, ...] = tuple(NODES)  # nodes that must end with their labels
    stderr: str = ""  # must appear on stderr
    args: tuple[str, ...] = ()


ALL = "6 node(s): 6 labeled, 0 unchanged, 0 failed, 0 with conflicts, 0 missing, 0 skipped"
N3_FAILED = "6 node(s): 5 labeled, 0 unchanged, 1 failed, 0 with conflicts, 0 missing, 0 skipped"
BUT_N3 = tuple(n for n in NODES if n != "n3")
DEADLINE = ("--request-timeout", "3s")


def once(path: str, reply: Reply, method: str = "PATCH") -> Callable[[FakeKube], list[Rule]]:
    return lambda fake: [Rule(method, path, reply)]


def always(path: str, reply: Reply, method: str = "PATCH") -> Callable[[FakeKube], list[Rule]]:
    return lambda fake: [Rule(method, path, reply, times=0)]


def conflict_then_other_node(fake: FakeKube) -> list[Rule]:
    return [
        Rule("PATCH", N3, says(answer("409 Conflict", STATUS_409))),
        Rule("GET", N3, lambda req, fwd: [fwd(Request("GET", "/api/v1/nodes/n0", {}, b""))], 0),
    ]


def conflict_with_nothing_left(fake: FakeKube) -> list[Rule]:
    def reply(req: Request, forward: Forward) -> Script:
        fake.set_node_labels("n3", {G: "3", T: "t"})  # someone wrote the same values first
        return [answer("409 Conflict", STATUS_409)]

    return [Rule("PATCH", N3, reply)]


CHUNKED = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
CASES = {
    # The write took effect, the answer is unreadable: the lost-reply check finds it.
    "chunk size -6": Case(
        once(N3, passed_on(f"{CHUNKED}-6\r\nabcdef\r\n0\r\n\r\n".encode())), 0, ALL
    ),
    # The answer never ends: its deadline ends it (--request-timeout, kubectl's flag, keeps
    # the test short; the default is 60 s).
    "chunk size 10^12": Case(
        once(N3, passed_on(f"{CHUNKED}e8d4a51000\r\n{{".encode())), 0, ALL, args=DEADLINE
    ),
    "Content-Length 10^12": Case(
        once(N3, passed_on(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n{")),
        0,
        ALL,
    ),
    "Content-Length and chunked": Case(
        once(
            N3,
            passed_on(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"0\r\n\r\n"
            ),
        ),
        0,
        ALL,
    ),
    "the echo of another node": Case(once(N3, other_node("n0")), 0, ALL),
    # Not written, and never said to be.
    "101 Switching Protocols": Case(
        once(N3, says(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n")),
        1,
        N3_FAILED,
        BUT_N3,
        "101 Switching Protocols: an answer the API server never gives",
    ),
    "302 Found": Case(
        once(N3, says(answer("302 Found", b"", "Location: http://elsewhere/"))),
        1,
        N3_FAILED,
        BUT_N3,
        "302 Found",
    ),
    "304 Not Modified": Case(
        once(N3, says(b"HTTP/1.1 304 Not Modified\r\n\r\n")), 1, N3_FAILED, BUT_N3, "304"
    ),
    # Unreadable and not written: checked (not there), sent again, written.
    "status 2_00": Case(once(N3, says(answer("2_00 OK", b"{}"))), 0, ALL),
    "status line FOO 200 OK": Case(
        once(N3, says(b"FOO 200 OK\r\nContent-Length: 2\r\n\r\n{}")), 0, ALL
    ),
    # http.client skips every 100 Continue, so the flood reads as silence until the deadline.
    "a flood of 100 Continue": Case(
        once(N3, says(b"HTTP/1.1 100 Continue\r\n\r\n" * 10_000)), 0, ALL, args=DEADLINE
    ),
    "a 1 MB header in 100-byte pieces": Case(
        once(
            N3,
            lambda req, fwd: trickle(
                b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 1_000_000 + b"\r\n\r\n", 100, 0.0
            ),
        ),
        0,
        ALL,
    ),
    # After a 409 the node read back is another node: n3 fails, n0 keeps its own labels.
    "GET after 409 answers another node": Case(
        conflict_then_other_node,
        1,
        "6 node(s): 5 labeled, 0 unchanged, 1 failed, 0 with conflicts, 0 missing, 0 skipped "
        "(5 patches",
        BUT_N3,
        "the answer holds object 'n0', not 'n3'",
    ),
    # A 409 whose re-plan finds nothing to do: unchanged, and the refused PATCH no patch.
    "409 with nothing left to do": Case(
        conflict_with_nothing_left,
        0,
        "6 node(s): 5 labeled, 1 unchanged, 0 failed, 0 with conflicts, 0 missing, 0 skipped "
        "(5 patches",
    ),
    # Every answer followed by one nobody asked for, in the same write or the next.
    "an extra answer glued to each": Case(always(ANY_NODE, then_extra(False)), 0, ALL),
    "an extra answer after each, one connection": Case(
        always(ANY_NODE, then_extra(True)), 0, "", args=("--concurrency", "1")
    ),
    "a 50 MB Status message, every time": Case(
        always(N3, says(huge_status(50 << 20))), 1, N3_FAILED, BUT_N3, "500 Internal Server"
    ),
    # The LIST: a clear error, nothing written.
    "a continue token that repeats": Case(
        always(
            LIST,
            says(answer("200 OK", b'{"kind":"NodeList","metadata":{"continue":"c"},"items":[]}')),
            method="GET",
        ),
        1,
        "",
        (),
        "gave the continue token of page 1 again",
    ),
    "a 300 MB LIST page": Case(
        always(
            LIST,
            says(b'HTTP/1.1 200 OK\r\nContent-Length: 314572800\r\n\r\n{"items":['),
            method="GET",
        ),
        1,
        "",
        (),
        "the answer is too large (a body of 314572800 bytes",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_one_hostile_reply(
    name: str,
    fake_kube: FakeKube,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = CASES[name]
    for node in NODES:
        fake_kube.add_node(node)
    csv = tmp_path / "c.csv"
    csv.write_text(f"nodeName,{G},{T}\n" + "".join(f"{n},{n[1:]},t\n" for n in NODES))
    with Relay(fake_kube, case.rules(fake_kube)) as relay:
        kubeconfig = relay.kubeconfig(tmp_path / "kubeconfig")
        capsys.readouterr()
        code = main(
            ["apply", "--config-path", str(csv), "--kubeconfig", str(kubeconfig), *case.args]
        )
        out, err = capsys.readouterr()
    assert code == case.code, err[-3000:]
    assert "Traceback" not in err
    assert len(out) + len(err) < 20_000  # nothing printed in bulk (a 50 MB message…)
    assert case.stderr in err
    if case.summary:
        assert out.splitlines()[-1].startswith(case.summary), out
    for node in NODES:
        labels = fake_kube.get_node(node)["metadata"]["labels"]
        # Each node has its own value or none: never another node's.
        assert labels.get(G) in (None, node[1:]), (node, labels)
        assert (labels.get(G) == node[1:]) == (node in case.written), (node, labels)
    if not case.written:
        assert fake_kube.count("patch") == 0
    if code == 0:  # whatever the order of writes and checks: every row counted once
        counts = out.splitlines()[-1].split(": ", 1)[1]
        assert counts.startswith(("6 labeled", "5 labeled, 1 unchanged", "4 labeled, 2 unch"))
