"""Run the fake API server as a process (for benchmarks and manual kubectl use).

    python -m tests.fakekube --nodes 10000 --latency-ms 2 --kubeconfig-out /tmp/kc

Prints one line with the URL once it is serving; runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import csv
import json
import signal
import sys
import threading
from pathlib import Path

from .server import FakeKube


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"{flag} expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def _csv_node_names(path: Path) -> list[str]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    return [row[0].strip() for row in rows[1:] if row and row[0].strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fakekube", description=__doc__)
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    ap.add_argument("--nodes", type=int, default=0, help="number of nodes to seed")
    ap.add_argument("--name-fmt", default="node-{:05d}", help="node name format")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="added to every request")
    ap.add_argument("--labels", nargs="*", default=[], metavar="K=V", help="labels on every node")
    ap.add_argument(
        "--allocatable", nargs="*", default=[], metavar="R=Q", help="e.g. nvidia.com/gpu=8"
    )
    ap.add_argument("--kubeconfig-out", type=Path, help="write a kubeconfig here")
    ap.add_argument("--journal-out", type=Path, help="write per-verb request counts on exit")
    ap.add_argument("--history", type=int, default=1000, help="watch event history length")
    ap.add_argument(
        "--nodes-from-csv",
        type=Path,
        help="also create one unlabeled node per row of this bulk CSV (first column nodeName)",
    )
    args = ap.parse_args(argv)

    labels = _pairs(args.labels, "--labels")
    alloc = _pairs(args.allocatable, "--allocatable") or None
    fake = FakeKube(port=args.port, latency_ms=args.latency_ms, history=args.history)
    fake.seed_nodes(args.nodes, args.name_fmt, (lambda i: labels) if labels else None, alloc)
    if args.nodes_from_csv:
        for name in _csv_node_names(args.nodes_from_csv):
            fake.add_node(name, labels=labels or None, allocatable=alloc)
    fake.start()
    if args.kubeconfig_out:
        fake.write_kubeconfig(args.kubeconfig_out)

    done = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(fake.url, flush=True)
    try:
        while not done.wait(0.5):
            pass
    finally:
        fake.stop()
        if args.journal_out:
            counts = fake.counts()
            counts["total"] = sum(counts.values())
            args.journal_out.write_text(json.dumps(counts, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
