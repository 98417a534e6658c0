"""Benchmark the hot-swap view (``audit``'s and the exporter's) at 10,000 nodes and 2,000
admitted TAS Workloads (run by hand).

    python bench/hotswap.py [--nodes 10000] [--workloads 2000] [--sliced 100] [--runs 3]

The cluster is bench/advise.py's (OCI-shaped, local blocks of 20 nodes with 8 GPUs each,
DaemonSet-like pods) with admitted TAS Workloads of 3 nodes each (one 8-GPU pod per node,
required local_block, v1beta2 compressed assignments): 4 per local block on its first 12
nodes, 8 nodes spare; in every 10th local block the spare nodes run other 8-GPU pods, so
its 4 Workloads have no replacement (10 % at risk). ``--sliced`` of them get 3-pod
local-block slices, which take the full replacement search. Times, in-process: reading the
objects into nodes with usage, then the view computed from them (what the exporter
recomputes after a change, and ``audit`` once). Prints a Markdown row for bench/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.advise import PREFIX, _pod  # noqa: E402
from bench.advise_workload import admitted, snapshot  # noqa: E402
from labeler.sim.common.cluster import snapshot_from_objects  # noqa: E402
from labeler.sim.kueue.hotswap import hot_swap  # noqa: E402


def cluster(nodes: int, workloads: int) -> dict[str, Any]:
    doc = snapshot(nodes, 0)  # nodes, DaemonSet pods, the Topology and the ResourceFlavor
    names = [it["metadata"]["name"] for it in doc["items"] if it["kind"] == "Node"]
    for w in range(workloads):
        block, k = divmod(w, 4)
        base = 20 * block
        doc["items"].append(admitted(w, names[base + 3 * k : base + 3 * k + 3]))
        if block % 10 == 0 and k == 0:  # this local block's spare nodes are busy
            for h in names[base + 12 : base + 20]:
                doc["items"].append(_pod(f"busy-{h}", h, {"cpu": "96", "nvidia.com/gpu": "8"}))
    return doc


def slice_some(doc: dict[str, Any], n: int) -> None:
    """Give ``n`` of the Workloads 3-pod local-block slices: a lost pod is then an
    incomplete slice, repaired in its own local block by the full search."""
    for item in [i for i in doc["items"] if i["kind"] == "Workload"][:n]:
        request = item["spec"]["podSets"][0]["topologyRequest"]
        request["podSetSliceRequiredTopology"] = PREFIX + "local_block_id"
        request["podSetSliceSize"] = 3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--workloads", type=int, default=2_000)
    ap.add_argument("--sliced", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    doc = cluster(args.nodes, args.workloads)
    slice_some(doc, args.sliced)
    started = time.perf_counter()
    snap = snapshot_from_objects(doc, "bench")
    read = time.perf_counter() - started
    times = []
    for _ in range(args.runs):
        started = time.perf_counter()
        view = hot_swap(snap.nodes, snap.kueue)
        times.append(time.perf_counter() - started)
    risky = len(view.at_risk)
    print(
        f"| hot-swap view, {args.nodes} nodes, {len(view.workloads)} admitted Workloads "
        f"({args.sliced} sliced) | {read:.2f} s | {statistics.median(times):.2f} s "
        f"(runs {', '.join(f'{t:.2f}' for t in times)}) | {risky} at risk |"
    )


if __name__ == "__main__":
    main()
