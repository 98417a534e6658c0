"""Benchmark ``advise -f`` of a kube-scheduler CompositePodGroup on a 10,000-node snapshot
(run by hand).

    python bench/advise_podgroup.py [--nodes 10000] [--subgroups 5] [--groups 10] [--pods 20]

The cluster is bench/advise.py's (OCI-shaped: islands ⊃ network blocks ⊃ local blocks of 20
nodes, 8 GPUs each, DaemonSet-like pods, 8-GPU training pods on ~60 % of the nodes), written
as JSON. The file is one hierarchy of 3 levels: a root CompositePodGroup constrained to an
island (gang, every sub-group), ``--subgroups`` CompositePodGroups constrained to a network
block (gang, every group), each with ``--groups`` PodGroups constrained to a local block
(gang, ``--pods`` pods of 2 GPUs each). With the defaults that is 5 × 10 × 20 = 1,000 pods.
Times reading, collecting and the simulation in-process, and the whole CLI in a subprocess,
and prints a Markdown table for bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.advise import PREFIX, cluster, timed  # noqa: E402
from labeler.sim.common.inputs import read_snapshot_objects  # noqa: E402
from labeler.sim.kubesched.objects import collect  # noqa: E402
from labeler.sim.kubesched.schedule import advise  # noqa: E402

GROUP = "scheduling.k8s.io"


def _group(kind: str, name: str, key: str, count: int, parent: str | None) -> dict[str, Any]:
    field = "minGroupCount" if kind == "CompositePodGroup" else "minCount"
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {field: count}},
        "schedulingConstraints": {"topology": [{"key": PREFIX + key}]},
    }
    if parent or kind == "CompositePodGroup":
        # The API server refuses a group in a hierarchy that names no Workload template.
        spec["workloadRef"] = {"workloadName": "job", "templateName": name}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    version = "v1alpha3" if kind == "CompositePodGroup" else "v1beta1"
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": kind,
        "metadata": {"name": name, "namespace": "bench"},
        "spec": spec,
    }


def _pod(name: str, group: str) -> dict[str, Any]:
    requests = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {
            "schedulingGroup": {"podGroupName": group},
            "containers": [{"name": "c", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Pending"},
    }


def hierarchy(subgroups: int, groups: int, pods: int) -> dict[str, Any]:
    items = [_group("CompositePodGroup", "root", "hpc_island_id", subgroups, None)]
    for s in range(subgroups):
        sub = f"sub-{s}"
        items.append(_group("CompositePodGroup", sub, "network_block_id", groups, "root"))
        for g in range(groups):
            pg = f"pg-{s}-{g}"
            items.append(_group("PodGroup", pg, "local_block_id", pods, sub))
            items += [_pod(f"{pg}-{i}", pg) for i in range(pods)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def basic_group(pods: int) -> list[dict[str, Any]]:
    """One basic PodGroup held to a network block, ``pods`` pods: placed pod by pod."""
    group = _group("PodGroup", "basic", "network_block_id", 1, None)
    group["spec"]["schedulingPolicy"] = {"basic": {}}
    return [group, *(_pod(f"basic-{i}", "basic") for i in range(pods))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--subgroups", type=int, default=5)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--pods", type=int, default=20, help="pods per PodGroup")
    ap.add_argument(
        "--compare", action="store_true", help="also simulate with the caches off (slow)"
    )
    args = ap.parse_args()
    rows: list[tuple[str, float]] = []
    doc = cluster(args.nodes, 4)
    file_doc = hierarchy(args.subgroups, args.groups, args.pods)
    pending = args.subgroups * args.groups * args.pods
    with tempfile.TemporaryDirectory() as tmp:
        snap_path = Path(tmp) / "snap.json"
        snap_path.write_text(json.dumps(doc), encoding="utf-8")
        pg_path = Path(tmp) / "pg.json"
        pg_path.write_text(json.dumps(file_doc), encoding="utf-8")
        snap, items = timed(
            "read + parse snapshot (JSON)", lambda: read_snapshot_objects(str(snap_path)), rows
        )
        asked = [(o, f"pg.json: object {i + 1}") for i, o in enumerate(file_doc["items"])]
        known = [(o, f"snap.json: items[{i}]") for i, o in enumerate(items)]
        objs = timed("collect the groups and pods", lambda: collect(asked, known), rows)
        label = (
            f"simulate: 1 + {args.subgroups} + {args.subgroups * args.groups} groups, "
            f"{pending} pods"
        )
        result = timed(label, lambda: advise(objs, snap.nodes, "pg.json"), rows)
        others = [(o, "basic") for o in basic_group(pending)]
        lone = collect(others, known)
        timed(
            f"simulate: a basic PodGroup of {pending} pods, pod by pod",
            lambda: advise(lone, snap.nodes, "basic"),
            rows,
        )
        if args.compare:
            slow = timed(
                label + ", caches off",
                lambda: advise(objs, snap.nodes, "pg.json", remember=False),
                rows,
            )
            same = [(p.pod.ref, p.node) for p in slow.pods] == [
                (p.pod.ref, p.node) for p in result.pods
            ]
            print(f"caches off: the same answer: {same}")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [
            sys.executable, "-m", "labeler", "advise", "--from-snapshot", str(snap_path),
            "-f", str(pg_path), "-o", "json",
        ]  # fmt: skip
        done = timed(
            "CLI end to end: advise -f (JSON snapshot)",
            lambda: subprocess.run(cmd, env=env, capture_output=True, check=False),
            rows,
        )
        cli = json.loads(done.stdout)
    bound = sum(1 for p in result.pods if p.node)
    n_pods = sum(1 for it in doc["items"] if it["kind"] == "Pod")
    print(f"{args.nodes} nodes, {n_pods} pods in the snapshot, Python {sys.version.split()[0]}")
    print(f"fits: {result.fits} ({bound} of {pending} pods bound); CLI fits: {cli['fits']}\n")
    print("| stage | seconds |\n|---|---:|")
    for label, secs in rows:
        print(f"| {label} | {secs:.3f} |")


if __name__ == "__main__":
    main()
