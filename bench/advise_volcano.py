"""Benchmark ``advise`` for Volcano on 6,000 nodes and 9,600 HyperNodes (run by hand).

    python bench/advise_volcano.py [--nodes 6000]

Builds a GPU cluster as Volcano sees it: every node its own tier-1 HyperNode, pairs of
nodes in tier 2, groups of ten in tier 3 (6,000 + 3,000 + 600 HyperNodes for 6,000
nodes), DaemonSet-like pods on every node and 8-GPU training pods on ~60 % of them, the
default queue and a scheduler configuration with network-topology-aware. Writes it as a
JSON snapshot, then times each stage in-process and the whole CLI in a subprocess, for
jobs that fit, that do not, and a PodGroup without minResources (every HyperNode of the
allowed tiers is tried: the case that took Volcano's own scheduler minutes before its
fix). Prints a Markdown table for bench/README.md.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labeler.sim.common.cluster import items_of  # noqa: E402
from labeler.sim.common.inputs import load_snapshot  # noqa: E402
from labeler.sim.volcano.advice import advise  # noqa: E402
from labeler.sim.volcano.conf import parse_conf  # noqa: E402
from labeler.sim.volcano.hypernodes import build_tree  # noqa: E402
from labeler.sim.volcano.jobs import expand_job  # noqa: E402
from labeler.sim.volcano.snapshot import split  # noqa: E402

CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: overcommit
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""


def _hn(name: str, tier: int, kind: str, members: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


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


def cluster(nodes: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    alloc = {"cpu": "224", "memory": "1979Gi", "nvidia.com/gpu": "8", "pods": "110"}
    for i in range(nodes):
        name = f"gpu-{i:05d}"
        ready = [{"type": "Ready", "status": "True"}]
        status = {"allocatable": alloc, "conditions": ready}
        items.append(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": status}
        )
        items.append(_pod(f"ds-{name}", name, {"cpu": "100m", "memory": "128Mi"}))
        if rng.random() < 0.6:
            items.append(_pod(f"train-{name}", name, {"cpu": "96", "nvidia.com/gpu": "8"}))
        items.append(_hn(f"host-{i:05d}", 1, "Node", [name]))
    for p in range(nodes // 2):
        items.append(
            _hn(f"pair-{p:05d}", 2, "HyperNode", [f"host-{2 * p:05d}", f"host-{2 * p + 1:05d}"])
        )
    for g in range(nodes // 10):
        items.append(
            _hn(f"group-{g:04d}", 3, "HyperNode", [f"pair-{5 * g + k:05d}" for k in range(5)])
        )
    meta = {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"}
    data = {"volcano-scheduler.conf": CONF}
    items.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})
    return {"apiVersion": "v1", "kind": "List", "items": items}


def job(name: str, workers: int, topology: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tasks": [{"name": "worker", "replicas": workers, "template": {"spec": {"containers": [
            {"name": "w", "image": "trainer",
             "resources": {"requests": {"cpu": "96", "nvidia.com/gpu": "8"},
                           "limits": {"nvidia.com/gpu": "8"}}}]}}}]
    }  # fmt: skip
    if topology:
        spec["networkTopology"] = topology
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "bench"}, "spec": spec}  # fmt: skip


def podgroup_list(workers: int) -> dict[str, Any]:
    """A PodGroup with no minResources: no HyperNode is pre-filtered by its resources."""
    topology = {"mode": "hard", "highestTierAllowed": 3}
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "bare", "namespace": "bench"},
          "spec": {"minMember": workers, "networkTopology": topology},
          "status": {"phase": "Inqueue"}}  # fmt: skip
    group = {"scheduling.k8s.io/group-name": "bare"}
    container = {"name": "w", "resources": {"requests": {"nvidia.com/gpu": "8"}}}
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"bare-{i}", "namespace": "bench", "annotations": group},
             "spec": {"containers": [container]},
             "status": {"phase": "Pending"}} for i in range(workers)]  # fmt: skip
    return {"apiVersion": "v1", "kind": "List", "items": [pg, *pods]}


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, env=env, capture_output=True, check=False)


def timed(label: str, fn: Callable[[], Any], rows: list[tuple[str, float, str]]) -> Any:
    start = time.perf_counter()
    result = fn()
    verdict = ""
    if hasattr(result, "fits"):
        verdict = f"fits={result.fits}, pods={len(result.verdict.binds)}"
    elif hasattr(result, "returncode"):
        verdict = f"exit {result.returncode}"
    rows.append((label, time.perf_counter() - start, verdict))
    return result


CASES = (
    ("4 workers, hard tier 3 (fits a group)", 4, {"mode": "hard", "highestTierAllowed": 3}),
    ("12 workers, hard tier 3 (no group holds it)", 12, {"mode": "hard", "highestTierAllowed": 3}),
    ("64 workers, soft (falls back to the cluster)", 64, {"mode": "soft"}),
    ("16 workers, no network topology", 16, None),
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=6000)
    args = ap.parse_args()
    rows: list[tuple[str, float, str]] = []
    doc = cluster(args.nodes)
    n_hn = sum(1 for it in doc["items"] if it["kind"] == "HyperNode")
    n_pods = sum(1 for it in doc["items"] if it["kind"] == "Pod")
    with tempfile.TemporaryDirectory() as tmp:
        snap_path = Path(tmp) / "snap.json"
        snap_path.write_text(json.dumps(doc), encoding="utf-8")
        parsed = timed("read + parse snapshot (JSON)", lambda: load_snapshot(str(snap_path)), rows)
        objects = timed(
            "sort objects, nodes with usage",
            lambda: split(items_of(parsed, "bench"), "bench"),
            rows,
        )
        c = objects.cluster
        tree = timed("build the HyperNode tree", lambda: build_tree(c.hypernodes, c.nodes), rows)
        conf = parse_conf(CONF, "bench")
        for label, workers, topo in CASES:
            gang = expand_job(job("j", workers, topo), "bench")
            timed(f"advise: {label}", lambda g=gang: advise(g, c, conf, tree), rows)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        bare = Path(tmp) / "bare.json"
        bare.write_text(json.dumps(podgroup_list(12)), encoding="utf-8")
        runs = [("Job, 4 workers, hard tier 3", job("j", 4, CASES[0][2])),
                ("Job, 12 workers, hard tier 3", job("j", 12, CASES[1][2]))]  # fmt: skip
        files = []
        for i, (label, manifest) in enumerate(runs):
            f = Path(tmp) / f"job{i}.json"
            f.write_text(json.dumps(manifest), encoding="utf-8")
            files.append((label, f))
        files.append(("PodGroup without minResources, 12 pods, hard tier 3", bare))
        for label, f in files:
            cmd = [sys.executable, "-m", "labeler", "advise", "-f", str(f)]
            cmd += ["--from-snapshot", str(snap_path), "-o", "json"]
            timed(f"CLI end to end: {label}", lambda c=cmd: _run(c, env), rows)
    print(
        f"{args.nodes} nodes, {n_hn} HyperNodes, {n_pods} pods, Python {sys.version.split()[0]}\n"
    )
    print("| stage | seconds | result |\n|---|---:|---|")
    for label, secs, verdict in rows:
        print(f"| {label} | {secs:.3f} | {verdict} |")


if __name__ == "__main__":
    main()
