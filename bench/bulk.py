"""Benchmark: bulk apply of a 10,000-node CSV vs MindCluster's one-kubectl-per-node method.

    /work/venv/bin/python bench/bulk.py [--nodes 10000] [--sample 200] [--latency-ms 5]
        [--tree NAME=PATH[:TRANSPORTS] ...] [--transports own,official] [--rounds N]

Phases, each against the fake API server running in its own process with LATENCY ms added
to every request (so its CPU is not counted as ours):
1. cold: ``topology-labeler apply`` (a subprocess, as a user runs it) of a CSV that gives
   every node two labels (huawei.com/topotree.groupid and huawei.com/topotree);
2. warm: the same command again (must make zero PATCH requests);
3. export, audit (one-shot): the other commands that read the whole LIST;
4. delete: removes the two labels again (one PATCH per node);
5. kubectl: MindCluster's method, ``kubectl label nodes <n> --overwrite k=v…`` once per
   node, sequentially, on the first SAMPLE nodes of a fresh server, extrapolated.

For each of our commands: wall time, the process's CPU seconds (user + sys) and its peak
RSS, from GNU time.

``--tree`` (repeatable) measures other checkouts in the same run (``before=<main>``, the
default ``after=`` this tree); ``--transports`` sets ``TOPOLOGY_LABELER_TRANSPORT`` for each
tree, which only checkouts from before the one transport read (``own``: their HTTP/1.1
path, ``official``: the official client's; later trees have only the official client's
and ignore it), or a tree's own list after a colon (``before=<old>:own``, ``after=.:one``);
``--rounds`` repeats the whole set, interleaved.

Request counts by verb are read from the fake's journal. The fake is the one of
``python -m tests.fakekube`` (FakeKube + seed_nodes); it is started here through a small
launcher that also answers "counts"/"clear" on stdin, because the module's
``--journal-out`` writes the counts only at exit and the warm phase needs the cold phase's
server. Not a test: run it by hand and copy the figures into bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"

LAUNCHER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from tests.fakekube import FakeKube
fake = FakeKube(latency_ms=float(sys.argv[3]))
fake.seed_nodes(int(sys.argv[2]), images=int(sys.argv[5]))
fake.start()
fake.write_kubeconfig(sys.argv[4])
print(fake.url, flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "counts":
        print(json.dumps(fake.counts()), flush=True)
    elif cmd == "clear":
        fake.clear_journal()
        print("{}", flush=True)
    elif cmd == "quit":
        break
fake.stop()
"""


class Fake:
    """The fake API server in a child process, with its journal readable over stdin."""

    def __init__(self, nodes: int, latency_ms: float, workdir: Path, images: int = 0) -> None:
        self.kubeconfig = workdir / f"kubeconfig-{nodes}"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                LAUNCHER,
                str(ROOT),
                str(nodes),
                str(latency_ms),
                str(self.kubeconfig),
                str(images),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def _ask(self, cmd: str) -> dict[str, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return dict(json.loads(self.proc.stdout.readline()))

    def counts(self) -> dict[str, int]:
        return self._ask("counts")

    def clear(self) -> None:
        self._ask("clear")

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)


def write_csv(path: Path, n: int) -> None:
    with path.open("w") as f:
        f.write(f"nodeName,{G},{T}\n")
        for i in range(n):
            f.write(f"node-{i:05d},{i // 48},bench\n")


class Timed:
    """One run of our command line: wall s, CPU s (user + sys), peak RSS MB, requests."""

    def __init__(
        self,
        fake: Fake,
        args: list[str],
        ok: tuple[int, ...] = (0,),
        tree: Path = ROOT,
        transport: str = "own",
    ) -> None:
        fake.clear()
        env = {**os.environ, "PYTHONPATH": str(tree), "TOPOLOGY_LABELER_TRANSPORT": transport}
        stats = fake.kubeconfig.with_suffix(".time")
        cmd = ["/usr/bin/time", "-o", str(stats), "-f", "%U %S %M"]
        cmd += [sys.executable, "-m", "labeler", *args, "--kubeconfig", str(fake.kubeconfig)]
        start = time.monotonic()
        # Run from the tree measured: ``python -m`` puts the working directory first on the
        # path, before PYTHONPATH, so another directory's labeler would be the one run.
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=tree)
        self.wall = time.monotonic() - start
        if out.returncode not in ok:
            raise SystemExit(f"{args[0]} failed ({out.returncode}):\n{out.stderr[-2000:]}")
        user, system, rss_kb = stats.read_text().split()[-3:]
        self.cpu = float(user) + float(system)
        self.rss = int(rss_kb) / 1024
        lines = out.stdout.strip().splitlines()
        self.summary = lines[-1] if lines else ""
        self.counts = fake.counts()

    def line(self, name: str, nodes: int) -> str:
        return (
            f"{name:12s}: {self.wall:7.2f} s wall  {self.cpu:6.2f} s CPU "
            f"({self.cpu / nodes * 1000:.3f} ms/node)  peak RSS {self.rss:6.1f} MB  "
            f"requests: {fmt(self.counts)}"
        )


def timed_apply(
    fake: Fake, csv: Path, concurrency: int, verb: str = "apply", **where: Any
) -> Timed:
    return Timed(
        fake, [verb, "--config-path", str(csv), "--concurrency", str(concurrency)], **where
    )


def kubectl_method(fake: Fake, n: int) -> tuple[float, dict[str, int]]:
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    fake.clear()
    env = {**os.environ, "KUBECONFIG": str(fake.kubeconfig)}
    start = time.monotonic()
    for i in range(n):
        cmd = [kubectl, "label", "nodes", f"node-{i:05d}", "--overwrite"]
        cmd += [f"{G}={i // 48}", f"{T}=bench"]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"kubectl failed: {out.stderr}")
    return time.monotonic() - start, fake.counts()


def fmt(counts: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def phases(args: argparse.Namespace, work: Path, csv: Path, **where: Any) -> list[tuple]:
    """(name, Timed) of every phase of one tree and transport, on a fresh fake."""
    fake = Fake(args.nodes, args.latency_ms, work, args.images)
    try:
        cold = timed_apply(fake, csv, args.concurrency, **where)
        warm = timed_apply(fake, csv, args.concurrency, **where)
        export = Timed(
            fake, ["export", "--profile=ascend-superpod", "-o", str(work / "x.csv")], **where
        )
        audit = Timed(
            fake,
            ["audit", "--profile=ascend-superpod", "--tree-name=bench", "-o", "json"],
            ok=(0, 3),
            **where,
        )
        delete = timed_apply(fake, csv, args.concurrency, verb="delete", **where)
    finally:
        fake.stop()
    return [
        ("cold apply", cold),
        ("warm re-run", warm),
        ("export", export),
        ("audit", audit),
        ("delete", delete),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--latency-ms", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--skip-kubectl", action="store_true")
    ap.add_argument(
        "--images",
        type=int,
        default=0,
        help="entries in each node's status.images (real nodes: dozens, 10-50 KB a node)",
    )
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--transports", default="own", help="comma-separated: own, official")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    trees = []
    for spec in args.tree or [f"after={ROOT}"]:
        name, _, rest = spec.partition("=")
        tree, _, transports = rest.partition(":")
        trees.append((name, str(Path(tree).resolve()), transports or args.transports))
    for _, tree, _ in trees:
        # Byte-compiled first, as pip install does: these machines set
        # PYTHONDONTWRITEBYTECODE, so a changed module would otherwise be compiled again by
        # every command measured.
        compile_cmd = [sys.executable, "-m", "compileall", "-q", str(Path(tree) / "labeler")]
        subprocess.run(compile_cmd, check=True)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        csv = work / "cluster.csv"
        write_csv(csv, args.nodes)
        cold_s = 0.0
        for round_no in range(1, args.rounds + 1):
            for name, tree, transports in trees:
                for transport in transports.split(","):
                    runs = phases(args, work, csv, tree=Path(tree), transport=transport)
                    print(
                        f"[round {round_no}] {name} ({tree}), transport {transport}: "
                        f"nodes={args.nodes} images={args.images} latency={args.latency_ms}ms "
                        f"concurrency={args.concurrency} "
                        f"load average {os.getloadavg()[0]:.1f}"
                    )
                    for phase, run in runs:
                        print(run.line(phase, args.nodes))
                        if phase != "audit":
                            print(f"              {run.summary}")
                    cold_s = runs[0][1].wall
        if args.skip_kubectl:
            return 0
        fake = Fake(args.sample, args.latency_ms, work)
        try:
            kube_s, kube_c = kubectl_method(fake, args.sample)
        finally:
            fake.stop()
        per_node_kubectl = kube_s / args.sample
        per_node_ours = cold_s / args.nodes
        print(
            f"kubectl    : {kube_s:7.2f} s for {args.sample} nodes "
            f"({per_node_kubectl * 1000:.0f} ms/node) requests: {fmt(kube_c)}"
        )
        print(
            f"kubectl extrapolated to {args.nodes} nodes: {per_node_kubectl * args.nodes:.0f} s; "
            f"ours {per_node_ours * 1000:.2f} ms/node; "
            f"ratio {per_node_kubectl / per_node_ours:.0f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
