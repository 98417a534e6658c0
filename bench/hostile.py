"""Experiment: a real ``topology-labeler apply`` of 50 nodes against replies a broken proxy,
load balancer or hostile endpoint would give.

    .venv/bin/python bench/hostile.py [--only SUBSTRING] [--markdown FILE]

Each kind of reply answers the requests of 10 of the 50 nodes (their PATCH; or the GET after
a 409; or the LIST), through the loopback relay of tests/kube/hostile.py in front of the fake
API server; every other request gets the fake's real answer. The command runs as a user
runs it (a subprocess, default timeouts) and is judged on what a user relies on:

- it ends (within 150 s, ``--time-limit``; the cases that hang a request get a SIGTERM
  after 5 s and must stop within the grace), with its summary, and no traceback;
- the summary counts every row once (the counts add up to 50);
- no node has another node's labels, and every node reported written has its own;
- the exit code says so (0 only when all 50 are labeled or unchanged);
- output and memory stay small (< 100 KB, < 300 MB).

Not a test (it takes minutes): run it by hand; the table goes into the report.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakekube import FakeKube  # noqa: E402
from tests.kube.hostile import (  # noqa: E402
    CLOSE,
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
NODES = [f"node-{i:02d}" for i in range(50)]
TARGETS = NODES[10:20]
SUMMARY = re.compile(
    r"(\d+) node\(s\): (\d+) labeled, (\d+) unchanged, (\d+) failed, (\d+) with conflicts, "
    r"(\d+) missing, (\d+) skipped(?:, (\d+) not written)?"
)


def script(items: Callable[[bytes], list[Any]]) -> Reply:
    """The write happens; the answer is built from the real one."""

    def reply(req: Request, forward: Forward) -> Script:
        return items(forward(req))

    return reply


def neighbour(req: Request, forward: Forward) -> Script:
    """The answer of the next node's GET (the write, if any, happens)."""
    if req.method != "GET":
        forward(req)
    name = req.target.rsplit("/", 1)[1].split("?")[0]
    other = NODES[(NODES.index(name) + 1) % len(NODES)]
    return [forward(Request("GET", f"/api/v1/nodes/{other}", {}, b""))]


def status(code: str, message: str = "", *fields: str) -> bytes:
    body = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "message": message,
            "code": int(code.split()[0]) if code[:3].isdigit() else 0,
        }
    ).encode()
    return answer(code, body, "Content-Type: application/json", *fields)


OK = "HTTP/1.1 200 OK\r\n"
CH = OK + "Transfer-Encoding: chunked\r\n\r\n"
BIG = 50 << 20


@dataclass
class Case:
    name: str
    target: str  # "patch", "get409" (the GET after a 409) or "list"
    reply: Reply
    every: bool = True  # every request of a target node, or only its first
    sigterm: bool = False  # a request hangs: SIGTERM after 5 s


def cases() -> list[Case]:
    c: list[Case] = []
    add = c.append
    # The status line
    for line in [
        "FOO 200 OK",
        "HTTP/1.1 2_00 OK",
        "HTTP/1.1 20 OK",
        "HTTP/1.1 2000 OK",
        "HTTP/2 200",
        "HTTP/0.9 200 OK",
        "HTTP/1.1 200OK",
        "http/1.1 200 OK",
    ]:
        add(
            Case(
                f"status line {line!r}",
                "patch",
                says(f"{line}\r\nContent-Length: 2\r\n\r\n{{}}".encode()),
            )
        )
    add(Case("an empty status line", "patch", says(b"\r\n\r\n")))
    add(Case("binary garbage", "patch", says(bytes(range(256)) * 4)))
    # Status codes the API never sends for a PATCH
    for code in [
        "101 Switching Protocols",
        "102 Processing",
        "199 X",
        "204 No Content",
        "205 Reset Content",
        "300 Multiple Choices",
        "301 Moved Permanently",
        "302 Found",
        "304 Not Modified",
        "307 Temporary Redirect",
        "308 Permanent Redirect",
        "399 X",
        "418 I'm a teapot",
        "600 X",
        "999 X",
    ]:
        add(Case(f"status {code}", "patch", says(status(code, "x", "Location: http://elsewhere/"))))
    add(
        Case(
            "103 Early Hints, then the answer",
            "patch",
            script(lambda real: [b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + real]),
        )
    )
    add(
        Case(
            "200 with the write done, after 100 Continue x3",
            "patch",
            script(lambda real: [b"HTTP/1.1 100 Continue\r\n\r\n" * 3 + real]),
        )
    )
    add(Case("a flood of 100 Continue", "patch", says(b"HTTP/1.1 100 Continue\r\n\r\n" * 100_000)))
    add(
        Case(
            "100 Continue, then nothing (hangs)",
            "patch",
            says(b"HTTP/1.1 100 Continue\r\n\r\n"),
            every=False,
            sigterm=True,
        )
    )
    # Error statuses (the request never reached the API server)
    for code in [
        "400 Bad Request",
        "401 Unauthorized",
        "403 Forbidden",
        "404 Not Found",
        "409 Conflict",
        "410 Gone",
        "422 Unprocessable Entity",
        "500 Internal Server Error",
        "503 Service Unavailable",
        "504 Gateway Timeout",
        "599 X",
    ]:
        add(Case(f"status {code} every time", "patch", says(status(code, "from a proxy"))))
    add(
        Case(
            "429 with Retry-After 1e308",
            "patch",
            says(status("429 Too Many", "", "Retry-After: 1e308")),
            every=False,
        )
    )
    add(
        Case(
            "429 with Retry-After -5",
            "patch",
            says(status("429 Too Many", "", "Retry-After: -5")),
            every=False,
        )
    )
    add(
        Case(
            "500 with a 50 MB message",
            "patch",
            says(status("500 Internal Server Error", "x" * BIG)),
        )
    )
    add(
        Case(
            "500 with a 50 MB message, once",
            "patch",
            says(status("500 Internal Server Error", "x" * BIG)),
            every=False,
        )
    )
    # Header fields
    add(
        Case(
            "a 1 MB header in 100-byte pieces",
            "patch",
            lambda r, f: trickle((OK + "X: ").encode() + b"a" * (1 << 20) + b"\r\n\r\n", 100, 0.0),
        )
    )
    add(
        Case(
            "10,000 header fields",
            "patch",
            says(OK.encode() + b"X-A: 1\r\n" * 10_000 + b"Content-Length: 2\r\n\r\n{}"),
        )
    )
    add(
        Case(
            "a header line without a colon",
            "patch",
            says(OK.encode() + b"Nope\r\nContent-Length: 2\r\n\r\n{}"),
        )
    )
    add(
        Case(
            "obs-fold in a header",
            "patch",
            says(OK.encode() + b"X: a\r\n b\r\nContent-Length: 2\r\n\r\n{}"),
        )
    )
    add(Case("bare LF line ends", "patch", script(lambda real: [real.replace(b"\r\n", b"\n")])))
    add(
        Case(
            "NUL in a header",
            "patch",
            says(OK.encode() + b"X: a\0b\r\nContent-Length: 2\r\n\r\n{}"),
        )
    )
    # Framing
    add(
        Case(
            "two different Content-Lengths",
            "patch",
            passed_on(OK.encode() + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"),
        )
    )
    for value in ["-2", "+2", "0x2", "2 2", "1000000000000"]:
        add(
            Case(
                f"Content-Length {value}",
                "patch",
                passed_on(f"{OK}Content-Length: {value}\r\n\r\n{{}}".encode()),
            )
        )
    add(
        Case(
            "Content-Length and chunked",
            "patch",
            passed_on(
                f"{OK}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode()
            ),
        )
    )
    add(
        Case(
            "Transfer-Encoding gzip, chunked",
            "patch",
            passed_on(f"{OK}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n".encode()),
        )
    )
    add(
        Case(
            "chunked in HTTP/1.0",
            "patch",
            passed_on(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        )
    )
    for size in ["-6", "0x10", "e8d4a51000", "00000000000000001", "zz"]:
        add(
            Case(
                f"chunk size {size}",
                "patch",
                passed_on(f"{CH}{size}\r\nabcdef\r\n0\r\n\r\n".encode()),
            )
        )
    add(
        Case(
            "a chunk longer than its size",
            "patch",
            passed_on(f"{CH}2\r\nabcdef\r\n0\r\n\r\n".encode()),
        )
    )
    add(
        Case(
            "endless trailers",
            "patch",
            passed_on(f"{CH}2\r\n{{}}\r\n0\r\n".encode() + b"X: 1\r\n" * 100_000),
        )
    )
    add(Case("a cut-off body", "patch", script(lambda real: [real[:-10], CLOSE])))
    add(
        Case("a body longer than Content-Length", "patch", script(lambda real: [real + b"garbage"]))
    )
    add(Case("200 with an empty body", "patch", passed_on(answer("200 OK", b""))))
    add(Case("200 with a non-JSON body", "patch", passed_on(answer("200 OK", b"<html>hi</html>"))))
    add(Case("200 with a JSON array", "patch", passed_on(answer("200 OK", b"[]"))))
    add(
        Case(
            "200 with a Success Status",
            "patch",
            passed_on(answer("200 OK", b'{"kind":"Status","status":"Success"}')),
        )
    )
    add(
        Case(
            "200 with a 50 MB body", "patch", passed_on(answer("200 OK", b"[" + b" " * BIG + b"]"))
        )
    )
    add(
        Case(
            "200 nested 100,000 deep",
            "patch",
            passed_on(answer("200 OK", b"[" * 100_000 + b"]" * 100_000)),
        )
    )
    add(Case("the echo of another node", "patch", neighbour))
    add(
        Case(
            "the write not done, another node's echo",
            "patch",
            lambda req, fwd: [fwd(Request("GET", "/api/v1/nodes/node-00", {}, b""))],
        )
    )
    # Connections
    add(Case("closed without an answer", "patch", lambda r, f: [CLOSE]))
    add(Case("written, then closed without an answer", "patch", lambda r, f: (f(r), [CLOSE])[1]))
    add(
        Case(
            "an extra answer glued to the answer",
            "patch",
            script(lambda real: [real + answer("200 OK", b"{}")]),
        )
    )
    add(
        Case(
            "an extra answer just after",
            "patch",
            script(lambda real: [real, answer("200 OK", b"{}")]),
        )
    )
    add(Case("the answer twice", "patch", script(lambda real: [real, real])))
    add(Case("the answer, then 10 ms, another", "patch", script(lambda real: [real, 0.01, real])))
    # Time
    add(Case("silence (hangs)", "patch", lambda r, f: [300.0], every=False, sigterm=True))
    add(
        Case(
            "the answer a byte every 0.5 s (hangs)",
            "patch",
            lambda r, f: trickle(f(r), 1, 0.5),
            every=False,
            sigterm=True,
        )
    )
    add(Case("silence, once per node", "patch", lambda r, f: [300.0], every=False))
    add(
        Case(
            "the answer a byte every 0.5 s, once per node",
            "patch",
            lambda r, f: trickle(f(r), 1, 0.5),
            every=False,
        )
    )
    # The GET after a 409
    add(Case("GET after 409: another node", "get409", neighbour))
    add(
        Case("GET after 409: a Status, 200", "get409", says(answer("200 OK", b'{"kind":"Status"}')))
    )
    add(
        Case(
            "GET after 409: labels as a list",
            "get409",
            lambda r, f: [
                answer(
                    "200 OK",
                    json.dumps(
                        {"metadata": {"name": r.target.rsplit("/", 1)[1], "labels": []}}
                    ).encode(),
                )
            ],
        )
    )
    add(Case("GET after 409: 302", "get409", says(status("302 Found", "", "Location: /x"))))

    # The LIST
    def list_doc(doc: dict[str, Any]) -> Reply:
        return says(answer("200 OK", json.dumps(doc).encode()))

    add(
        Case(
            "LIST: a continue token that repeats",
            "list",
            list_doc({"kind": "NodeList", "metadata": {"continue": "c"}, "items": []}),
        )
    )
    pages = iter(range(10**9))
    add(
        Case(
            "LIST: a new continue token for ever",
            "list",
            lambda r, f: [
                answer(
                    "200 OK",
                    json.dumps(
                        {
                            "kind": "NodeList",
                            "metadata": {"continue": f"t{next(pages)}"},
                            "items": [],
                        }
                    ).encode(),
                )
            ],
        )
    )
    add(
        Case(
            "LIST: a 300 MB page (Content-Length)",
            "list",
            says(b'HTTP/1.1 200 OK\r\nContent-Length: 314572800\r\n\r\n{"items":['),
        )
    )
    add(
        Case(
            "LIST: a 300 MB chunked page",
            "list",
            lambda r, f: (
                [CH.encode()] + [b"100000\r\n" + b" " * 0x100000 + b"\r\n"] * 300 + [b"0\r\n\r\n"]
            ),
        )
    )
    add(Case("LIST: a JSON array", "list", says(answer("200 OK", b"[]"))))
    add(
        Case(
            "LIST: items not a list",
            "list",
            list_doc({"kind": "NodeList", "metadata": {}, "items": {}}),
        )
    )
    add(
        Case(
            "LIST: labels not strings",
            "list",
            list_doc(
                {
                    "kind": "NodeList",
                    "metadata": {},
                    "items": [{"metadata": {"name": "node-00", "labels": {"a": 1}}}],
                }
            ),
        )
    )
    add(
        Case(
            "LIST: a byte every 0.5 s, once (hangs the page)",
            "list",
            lambda r, f: trickle(f(r), 1, 0.5),
            every=False,
        )
    )
    add(Case("LIST: 500 every time", "list", says(status("500 Internal Server Error", "x"))))
    return c


def rules_for(case: Case, fake: FakeKube) -> list[Rule]:
    if case.target == "list":
        return [Rule("GET", r"/api/v1/nodes", case.reply, times=0 if case.every else 1)]
    rules: list[Rule] = []
    for name in TARGETS:
        path = f"/api/v1/nodes/{name}"
        if case.target == "get409":
            conflict = status("409 Conflict", f'nodes "{name}": the object has been modified')
            rules.append(Rule("PATCH", path, says(conflict), times=1))
            rules.append(Rule("GET", path, case.reply, times=0 if case.every else 1))
        else:
            rules.append(Rule("PATCH", path, case.reply, times=0 if case.every else 1))
    return rules


def run_case(case: Case, transport: str, work: Path, limit: float = 150.0) -> dict[str, Any]:
    csv = work / "c.csv"
    csv.write_text(f"nodeName,{G},{T}\n" + "".join(f"{n},{n[-2:]},t\n" for n in NODES))
    with FakeKube() as fake:
        for name in NODES:
            fake.add_node(name)
        with Relay(fake, rules_for(case, fake)) as relay:
            kubeconfig = relay.kubeconfig(work / "kubeconfig")
            stats = work / "time.txt"
            stats.unlink(missing_ok=True)
            cmd = [
                sys.executable,
                "-m",
                "labeler",
                "apply",
                "--config-path",
                str(csv),
                "--kubeconfig",
                str(kubeconfig),
            ]
            if not case.sigterm:  # GNU time would not pass the signal on: no RSS figure then
                cmd = ["/usr/bin/time", "-o", str(stats), "-f", "%M", *cmd]
            env = {**os.environ, "PYTHONPATH": str(ROOT), "TOPOLOGY_LABELER_TRANSPORT": transport}
            start = time.monotonic()
            # A session of its own, so that a hung run is killed whole: GNU time and the
            # Python under it.
            proc = subprocess.Popen(
                cmd,
                env=env,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            if case.sigterm:
                time.sleep(5)
                proc.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
            try:
                out, err = proc.communicate(timeout=limit)
                code: int | str = proc.returncode
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                code = "hung"
            took = time.monotonic() - start
            stop = time.monotonic() - signalled if case.sigterm else None
        labels = {n: fake.get_node(n)["metadata"]["labels"] for n in NODES}
    text, errors = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    # A run killed at the time limit leaves GNU time's file empty.
    rss = (stats.read_text().split() or ["?"])[-1] if stats.exists() else "?"
    return judge(case, code, text, errors, labels, took, stop, rss)


def judge(
    case: Case,
    code: Any,
    out: str,
    err: str,
    labels: dict[str, dict[str, str]],
    took: float,
    stop: float | None,
    rss: str,
) -> dict[str, Any]:
    summary = next((m for m in map(SUMMARY.match, reversed(out.splitlines())) if m), None)
    counts = [int(x or 0) for x in summary.groups()] if summary else []
    wrong = [n for n in NODES if labels[n].get(G) not in (None, n[-2:])]
    have = {n for n in NODES if labels[n].get(G) == n[-2:]}
    failed = set(re.findall(r"^(node-\d\d): failed:", out, re.M))
    said_written = {m for m in re.findall(r"^(node-\d\d): add ", out, re.M)} - failed
    untrue = sorted(said_written - have)
    problems = []
    if code == "hung":
        problems.append("hung")
    if "Traceback" in err:
        problems.append("traceback")
    if summary is None and case.target != "list":
        problems.append("no summary")
    if counts and sum(counts[1:]) != counts[0]:
        problems.append(f"counts add to {sum(counts[1:])}")
    if wrong:
        problems.append(f"{len(wrong)} with another's labels")
    if untrue:
        problems.append(f"{len(untrue)} said written, not")
    if counts and code == 0 and counts[1] + counts[2] != counts[0]:
        problems.append("exit 0 though not all done")
    if counts and code not in (0, 143) and counts[1] + counts[2] == counts[0]:
        problems.append("an error exit though all done")
    if case.target == "list" and case.every and code == 0:
        problems.append("a broken LIST exited 0")
    if case.target == "list" and len(have) and code != 0:
        problems.append("written after a LIST error")
    if len(out) + len(err) > 100_000:
        problems.append(f"{(len(out) + len(err)) // 1000} KB of output")
    if rss != "?" and int(rss) > 300_000:
        problems.append(f"{int(rss) // 1024} MB")
    if stop is not None and stop > 15:
        problems.append(f"SIGTERM took {stop:.0f} s")
    short = (
        summary.group(0).split(": ", 1)[1]
        if summary
        else (err.strip().splitlines() or [""])[-1][:90]
    )
    return {
        "case": case.name,
        "code": code,
        "seconds": round(took, 1),
        "summary": short,
        "written": len(have),
        "rss_mb": int(rss) // 1024 if rss != "?" else "?",
        "verdict": "ok" if not problems else "; ".join(problems),
    }


def markdown(results: list[dict[str, dict[str, Any]]]) -> str:
    """One row per kind of reply: what each transport's run ended with, and its verdict."""
    transports = list(results[0]) if results else []
    head = ["kind of reply"] + [f"{t}: exit, summary, verdict" for t in transports]
    lines = [
        "# Hostile replies and what `apply` made of them",
        "",
        "Written by `python bench/hostile.py --markdown FILE` (see bench/README.md): a real",
        "`apply` of 50 nodes per run, the reply answering the requests of 10 of them (their",
        "PATCH, the GET after a 409, or the LIST). Each cell: the exit code, the summary's",
        "counts that are not 0, the run's time, and the verdict on what a user relies on.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in results:
        first = next(iter(row.values()))
        cells = [first["case"].replace("|", "\\|")]
        for t in transports:
            r = row[t]
            parts = str(r["summary"]).replace("|", "\\|").split(", ")
            summary = ", ".join(p for p in parts if not p.startswith("0 ")) or "-"
            cells.append(f"{r['code']}, {summary} ({r['seconds']} s), **{r['verdict']}**")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Each name is a column; it is passed as $TOPOLOGY_LABELER_TRANSPORT, which checkouts
    # from before the one transport read ("own", "official") and later ones ignore.
    ap.add_argument("--transports", default="one")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument(
        "--time-limit", type=float, default=150.0, help="seconds before a run counts as hung"
    )
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--markdown", type=Path, help="also write them here as a table")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases():
            if args.only not in case.name:
                continue
            row: dict[str, Any] = {}
            for transport in args.transports.split(","):
                result = run_case(case, transport, Path(tmp), args.time_limit)
                row[transport] = result
                print(
                    f"{transport:8s} {result['verdict']:4s} exit {result['code']!s:4s} "
                    f"{result['seconds']:5.1f}s {result['rss_mb']!s:>4s} MB  {case.name}: "
                    f"{result['summary']}",
                    flush=True,
                )
            results.append(row)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(results))
    bad = sum(r["verdict"] != "ok" for row in results for r in row.values())
    print(f"{len(results)} kinds of reply, {bad} runs not ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
