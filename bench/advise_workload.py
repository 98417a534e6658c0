"""Benchmark ``advise -f`` of a 3-PodSet JobSet on a 10,000-node snapshot with 2,000
admitted Workloads (run by hand).

    python bench/advise_workload.py [--nodes 10000] [--workloads 2000]

The cluster is bench/advise.py's (OCI-shaped, 8 GPUs per node, DaemonSet-like pods), with
its training pods replaced by admitted TAS Workloads: each holds 3 nodes (one 8-GPU pod
each, v1beta2 compressed topology assignment) and has its 3 running TAS pods. Kueue's
Topology and ResourceFlavor are in the snapshot, so no profile flag is given. Times the
whole CLI in a subprocess (YAML snapshot) and prints a Markdown row for bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.advise import PREFIX, _pod, cluster  # noqa: E402

TAS = {"kueue.x-k8s.io/podset-required-topology": PREFIX + "local_block_id"}


def admitted(i: int, hosts: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i:05d}", "namespace": "bench"},
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": len(hosts),
                    "template": {
                        "metadata": {"annotations": dict(TAS)},
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "resources": {"requests": {"cpu": "96", "nvidia.com/gpu": "8"}},
                                }
                            ]
                        },
                    },
                    "topologyRequest": {"required": PREFIX + "local_block_id"},
                }
            ]
        },
        "status": {
            "admission": {
                "clusterQueue": "gpu",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": len(hosts),
                        "flavors": {"cpu": "h100", "nvidia.com/gpu": "h100"},
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "slices": [
                                {
                                    "domainCount": len(hosts),
                                    "valuesPerLevel": [
                                        {
                                            "individual": {
                                                "prefix": "gpu-",
                                                "roots": [h[4:] for h in hosts],
                                            }
                                        }
                                    ],
                                    "podCounts": {"universal": 1},
                                }
                            ],
                        },
                    }
                ],
            }
        },
    }


def snapshot(nodes: int, workloads: int) -> dict[str, Any]:
    doc = cluster(nodes, 4)
    items = [it for it in doc["items"] if not it["metadata"]["name"].startswith("train-")]
    names = [it["metadata"]["name"] for it in items if it["kind"] == "Node"]
    for w in range(workloads):
        hosts = names[3 * w : 3 * w + 3]
        items.append(admitted(w, hosts))
        for h in hosts:
            p = _pod(f"wl-{w:05d}-{h}", h, {"cpu": "96", "nvidia.com/gpu": "8"})
            p["metadata"]["annotations"] = dict(TAS)
            items.append(p)
    levels = ["hpc_island_id", "network_block_id", "local_block_id"]
    items.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {
                "levels": [{"nodeLabel": PREFIX + k} for k in levels]
                + [{"nodeLabel": "kubernetes.io/hostname"}]
            },
        }
    )
    items.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "h100"},
            "spec": {"topologyName": "default"},
        }
    )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def jobset() -> dict[str, Any]:
    def rj(name: str, n: int, req: dict[str, str], ann: dict[str, str]) -> dict[str, Any]:
        tpl = {
            "metadata": {"annotations": ann},
            "spec": {"containers": [{"name": "c", "resources": {"requests": req}}]},
        }
        return {
            "name": name,
            "replicas": 1,
            "template": {"spec": {"parallelism": n, "template": tpl}},
        }

    group = {
        "kueue.x-k8s.io/podset-required-topology": PREFIX + "network_block_id",
        "kueue.x-k8s.io/podset-group-name": "train",
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "bench", "namespace": "bench"},
        "spec": {
            "replicatedJobs": [
                rj("leader", 1, {"cpu": "8"}, group),
                rj("workers", 64, {"cpu": "32", "nvidia.com/gpu": "8"}, group),
                rj(
                    "eval",
                    8,
                    {"nvidia.com/gpu": "8"},
                    {"kueue.x-k8s.io/podset-preferred-topology": PREFIX + "local_block_id"},
                ),
            ]
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--workloads", type=int, default=2_000)
    ap.add_argument("--json", action="store_true", help="write the snapshot as JSON")
    args = ap.parse_args()
    doc = snapshot(args.nodes, args.workloads)
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / ("snap.json" if args.json else "snap.yaml")
        if args.json:
            snap.write_text(json.dumps(doc), encoding="utf-8")
        else:
            dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
            snap.write_text(yaml.dump(doc, Dumper=dumper), encoding="utf-8")
        js = Path(tmp) / "jobset.yaml"
        js.write_text(yaml.safe_dump(jobset()), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [
            sys.executable,
            "-m",
            "labeler",
            "advise",
            "-f",
            str(js),
            "--from-snapshot",
            str(snap),
            "-o",
            "json",
        ]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        elapsed = time.perf_counter() - start
        if proc.returncode not in (0, 3):
            sys.exit(proc.stderr)
        out = json.loads(proc.stdout)
        verdicts = [(p["name"], p["fits"]) for p in out["workloads"][0]["podsets"]]
        size = snap.stat().st_size / 1e6
    fmt = snap.suffix[1:].upper()
    print(
        f"| advise -f JobSet (3 PodSets), {args.nodes} nodes, {args.workloads} admitted "
        f"Workloads, {fmt} {size:.0f} MB, end to end | {elapsed:.2f} s | {verdicts} |"
    )


if __name__ == "__main__":
    main()
