"""bench/realkube.py bulk: label NODES nodes on a real API server with topology-labeler
apply, kubectl label and client-go, at one concurrency; see bench/realkube.py."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench.realkube_plane import (
    ROOT,
    Admin,
    delta,
    metric_lines,
    proc_cpu,
    request_counts,
    start_plane,
)
from tests.realkube.controlplane import ControlPlane

G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"
# The bookkeeping annotations apply writes beside the labels; a reset removes them too, so
# that every round starts from the same nodes.
OURS = "topology-labeler.io/"
CLIENTGO_BUILD = ROOT / "bench" / "clientgo" / "build.sh"


@dataclass
class Row:
    """One measured run. ``scale`` > 1: a sample, multiplied up to the full node count."""

    method: str
    nodes: int
    wall: float
    client: float
    apiserver: float
    etcd: float
    requests: dict[str, int] = field(default_factory=dict)
    scale: float = 1.0
    said: str = ""


@dataclass
class Bench:
    plane: ControlPlane
    admin: Admin
    names: list[str]
    concurrency: int
    csvs: dict[str, Path]
    clientgo: Path
    cache: Path
    rows: list[Row] = field(default_factory=list)

    def measure(self, method: str, nodes: int, run: Callable[[], str], scale: float = 1.0) -> Row:
        """``run`` in an interval bounded by the server's request counts (read just outside
        it) and CPU counters of the children, kube-apiserver and etcd."""
        api, etcd = self.plane.procs["kube-apiserver"].pid, self.plane.procs["etcd"].pid
        before = request_counts(metric_lines(self.plane))
        usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        api0, etcd0, start = proc_cpu(api), proc_cpu(etcd), time.monotonic()
        said = run()
        wall = time.monotonic() - start
        api1, etcd1 = proc_cpu(api), proc_cpu(etcd)
        usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        after = request_counts(metric_lines(self.plane))
        client = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
        nodes_requests = {
            verb: n for (verb, res), n in delta(after, before).items() if res == "nodes"
        }
        row = Row(
            method, nodes, wall, client, api1 - api0, etcd1 - etcd0, nodes_requests, scale, said
        )
        self.rows.append(row)
        print(
            f"  {method}: {wall:.2f} s wall, client {client:.2f} s, "
            f"apiserver {row.apiserver:.2f} s, etcd {row.etcd:.2f} s, "
            f"requests {nodes_requests} — {said}",
            flush=True,
        )
        return row

    def apply(self, csv: str) -> Callable[[], str]:
        cmd = [
            sys.executable,
            "-m",
            "labeler",
            "apply",
            "--config-path",
            str(self.csvs[csv]),
            "--kubeconfig",
            str(self.plane.kubeconfig),
            "--concurrency",
            str(self.concurrency),
        ]
        # From the tree measured, with its modules first on the path (as bench/bulk.py does).
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return lambda: last_line(
            subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
        )

    def clientgo_run(self, csv: str) -> Callable[[], str]:
        cmd = [
            str(self.clientgo),
            "--kubeconfig",
            str(self.plane.kubeconfig),
            "--config-path",
            str(self.csvs[csv]),
            "--concurrency",
            str(self.concurrency),
        ]
        return lambda: last_line(subprocess.run(cmd, capture_output=True, text=True))

    def kubectl_run(self, sample: list[str], workers: int) -> Callable[[], str]:
        values = {name: (str(i // 48), "bench") for i, name in enumerate(self.names)}

        def label(name: str) -> None:
            group, tree = values[name]
            last_line(
                subprocess.run(
                    [
                        str(self.plane.bin / "kubectl"),
                        f"--kubeconfig={self.plane.kubeconfig}",
                        f"--cache-dir={self.cache}",
                        "label",
                        "nodes",
                        name,
                        "--overwrite",
                        f"{G}={group}",
                        f"{T}={tree}",
                    ],
                    capture_output=True,
                    text=True,
                )
            )

        def run() -> str:
            with ThreadPoolExecutor(workers) as pool:
                for _ in pool.map(label, sample):
                    pass
            return f"{len(sample)} kubectl processes, {workers} at a time"

        return run

    def reset(self, names: list[str]) -> None:
        """Remove the two labels (and apply's annotations) from ``names``; checked."""

        def one(name: str) -> object:
            node = self.admin.request("GET", f"/api/v1/nodes/{name}")
            notes = node["metadata"].get("annotations") or {}
            patch = {
                "metadata": {
                    "labels": {G: None, T: None},
                    "annotations": {k: None for k in notes if k.startswith(OURS)},
                }
            }
            return self.admin.request(
                "PATCH", f"/api/v1/nodes/{name}", patch, "application/merge-patch+json"
            )

        self.admin.each(one, names)
        left = self.admin.count_labelled(G)
        if left:
            raise SystemExit(f"reset left {G} on {left} nodes")

    def expect(self, selector: str, count: int) -> None:
        found = self.admin.count_labelled(selector)
        if found != count:
            raise SystemExit(f"expected {count} nodes with {selector}, found {found}")


def last_line(out: subprocess.CompletedProcess[str]) -> str:
    if out.returncode != 0:
        raise SystemExit(f"{out.args[0]} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    lines = out.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def write_csv(path: Path, names: list[str], tree: str, offset: int) -> Path:
    with path.open("w") as f:
        f.write(f"nodeName,{G},{T}\n")
        for i, name in enumerate(names):
            f.write(f"{name},{i // 48 + offset},{tree}\n")
    return path


def one_round(b: Bench, sample: int, apply_first: bool) -> None:
    """apply's three runs and clientgo's, in the order given (rounds alternate it, so that a
    change in the machine's load does not favour one), then kubectl on a sample."""
    n = len(b.names)
    clients = [("apply", b.apply), ("clientgo", b.clientgo_run)]
    for name, run in clients if apply_first else clients[::-1]:
        b.measure(f"{name}, cold", n, run("a"))
        b.expect(f"{T}=bench", n)
        again = "warm (nothing to write)" if name == "apply" else "same values again"
        b.measure(f"{name}, {again}", n, run("a"))
        b.measure(f"{name}, changed values", n, run("b"))
        b.expect(f"{T}=bench-b", n)
        b.reset(b.names)
    first = b.names[:sample]
    for workers in (b.concurrency, 1):
        run = b.kubectl_run(first, workers)
        b.measure(f"kubectl label, {workers} at a time", sample, run, n / sample)
        b.expect(f"{T}=bench", sample)
        b.reset(first)


def run_bulk(args: argparse.Namespace) -> None:
    clientgo = Path(
        subprocess.run(
            [str(CLIENTGO_BUILD)], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    plane = start_plane(args.workdir)
    try:
        admin = Admin(plane)
        names = [f"node-{i:05d}" for i in range(args.nodes)]
        start = time.monotonic()
        admin.create_nodes(names, args.images)
        size = len(plane.kubectl("get", "node", names[0], "-o", "json").stdout)
        print(
            f"created {len(names)} nodes in {time.monotonic() - start:.0f} s "
            f"(each {size / 1024:.1f} KiB as JSON)",
            flush=True,
        )
        csvs = {
            "a": write_csv(args.workdir / "a.csv", names, "bench", 0),
            "b": write_csv(args.workdir / "b.csv", names, "bench-b", 1000),
        }
        b = Bench(
            plane, admin, names, args.concurrency, csvs, clientgo, args.workdir / "kubectl-cache"
        )
        plane.kubectl(f"--cache-dir={b.cache}", "api-resources")  # discovery cached, as a user's is
        for r in range(args.rounds):
            print(
                f"round {r + 1} of {args.rounds} (load average {os.getloadavg()[0]:.1f})",
                flush=True,
            )
            one_round(b, min(args.kubectl_sample, len(names)), apply_first=r % 2 == 0)
        print()
        print(table(b.rows, args.nodes, args.concurrency))
    finally:
        plane.stop()


def table(rows: list[Row], total: int, concurrency: int) -> str:
    """Markdown: one line per run; a sample's figures scaled to ``total`` nodes (marked)."""
    out = [
        f"| {total:,} nodes, concurrency {concurrency} | wall | client CPU | kube-apiserver CPU "
        "| etcd CPU | per node: wall / client / server (apiserver + etcd) | node requests |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        k = r.scale
        mark = f" (×{k:.0f} from {r.nodes})" if k != 1 else ""
        per = (
            f"{r.wall * 1000 / r.nodes:.2f} / {r.client * 1000 / r.nodes:.3f} / "
            f"{(r.apiserver + r.etcd) * 1000 / r.nodes:.3f} ms"
        )
        reqs = ", ".join(f"{verb} {n * k:,.0f}" for verb, n in sorted(r.requests.items())) or "none"
        out.append(
            f"| {r.method}{mark} | {r.wall * k:.1f} s | {r.client * k:.2f} s "
            f"| {r.apiserver * k:.2f} s | {r.etcd * k:.2f} s | {per} | {reqs} |"
        )
    return "\n".join(out)
