"""Benchmark ``advise``/``domains`` on a generated 10,000-node snapshot (run by hand).

    python bench/advise.py [--nodes 10000] [--pods-per-node 4]

Builds an OCI-shaped cluster (islands ⊃ network blocks ⊃ local blocks of 20 nodes, 8 GPUs
each), with DaemonSet-like pods on every node and training pods filling ~60 % of the GPUs,
writes it as YAML and JSON, then times each stage in-process and the whole CLI in a
subprocess. Prints a Markdown table for bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labeler.core.profiles import oci_rdma  # noqa: E402
from labeler.sim.common.inputs import read_snapshot  # noqa: E402
from labeler.sim.common.shape import PodShape  # noqa: E402
from labeler.sim.kueue.advice import advise, make_job  # noqa: E402
from labeler.sim.kueue.inventory import inventory  # noqa: E402
from labeler.sim.kueue.tree import build_tree, leaf_capacity  # noqa: E402

PREFIX = "oci.oraclecloud.com/rdma."


def cluster(nodes: int, ds_pods: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"gpu-{i:05d}"
        lb, nb, island = i // 20, i // 400, i // 2000
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        PREFIX + "hpc_island_id": f"island-{island}",
                        PREFIX + "network_block_id": f"nb-{nb}",
                        PREFIX + "local_block_id": f"lb-{lb}",
                    },
                },
                "spec": {},
                "status": {
                    "allocatable": {
                        "cpu": "224",
                        "memory": "1979Gi",
                        "nvidia.com/gpu": "8",
                        "pods": "110",
                    },
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
        for d in range(ds_pods):
            items.append(_pod(f"ds{d}-{name}", name, {"cpu": "100m", "memory": "128Mi"}))
        if rng.random() < 0.6:
            items.append(_pod(f"train-{name}", name, {"cpu": "96", "nvidia.com/gpu": "8"}))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _pod(name: str, node: str, requests: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Running"},
    }


def timed(label: str, fn: Callable[[], Any], rows: list[tuple[str, float]]) -> Any:
    start = time.perf_counter()
    result = fn()
    rows.append((label, time.perf_counter() - start))
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods-per-node", type=int, default=4, help="DaemonSet-like pods per node")
    args = ap.parse_args()
    rows: list[tuple[str, float]] = []
    doc = cluster(args.nodes, args.pods_per_node)
    n_pods = sum(1 for it in doc["items"] if it["kind"] == "Pod")
    with tempfile.TemporaryDirectory() as tmp:
        y = Path(tmp) / "snap.yaml"
        j = Path(tmp) / "snap.json"
        y.write_text(
            yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)), encoding="utf-8"
        )
        j.write_text(json.dumps(doc), encoding="utf-8")
        snap = timed("read + parse snapshot (JSON)", lambda: read_snapshot(str(j)), rows)
        timed("read + parse snapshot (YAML)", lambda: read_snapshot(str(y)), rows)
        topo = oci_rdma().topology
        tree = timed(
            "build tree", lambda: build_tree(topo, snap.nodes, topology_name="oci-rdma"), rows
        )
        shape = PodShape({"nvidia.com/gpu": 8})
        for label, mode, level, count, slices in (
            ("advise required local_block, 16 pods (fits)", "required", "local_block", 16, []),
            ("advise required local_block, 21 pods (no fit)", "required", "local_block", 21, []),
            (
                "advise preferred local_block, 3000 pods (spreads)",
                "preferred",
                "local_block",
                3000,
                [],
            ),
            ("advise unconstrained, 2000 pods", "unconstrained", None, 2000, []),
            (
                "advise required network_block, 64 pods, local_block slices of 8",
                "required",
                "network_block",
                64,
                [("local_block", 8)],
            ),
        ):
            job = make_job(topo, count, mode=mode, level=level, slices=slices)
            timed(label, lambda job=job: advise(topo, tree, shape, job), rows)

        def domains() -> Any:
            now = leaf_capacity(tree, shape)
            return inventory(tree, now, leaf_capacity(tree, shape, empty=True), pods=8)

        timed("domains --pods 8", domains, rows)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for fmt, path in (("JSON", j), ("YAML", y)):
            cmd = [
                sys.executable, "-m", "labeler", "advise", "--profile", "oci-rdma",
                "--from-snapshot", str(path), "--pods", "21", "--request", "nvidia.com/gpu=8",
                "--required", "local_block", "-o", "json",
            ]  # fmt: skip
            timed(
                f"CLI end to end: advise ({fmt} snapshot)",
                lambda cmd=cmd, env=env: subprocess.run(
                    cmd, env=env, capture_output=True, check=False
                ),
                rows,
            )
    print(f"{args.nodes} nodes, {n_pods} pods, Python {sys.version.split()[0]}\n")
    print("| stage | seconds |\n|---|---:|")
    for label, secs in rows:
        print(f"| {label} | {secs:.3f} |")


if __name__ == "__main__":
    main()
