"""Benchmark of `topology-labeler audit` at cluster scale (run by hand, not in CI).

    /work/venv/bin/python bench/audit.py [--nodes 10000] [--latency-ms 0] [--changes 10]

Starts the fake API server as a process seeded with N GPU nodes (95 % fully labeled in
100-node local blocks, 3 % missing the local block, 2 % unlabeled), then the exporter
(`python -m labeler audit --serve`) as another process, and measures:
- time from exporter start to the first complete /metrics, and its RSS (current and peak);
- update latency: one label removed or restored through the API → seen in /metrics;
- a burst of label changes → all reflected;
- the one-shot `audit -o json` wall time, and one in-process recomputation (build_report).
Targets: first metrics < 10 s, RSS < 200 MB at 10,000 nodes; changes within 1 s.

With ``--dra`` the nodes have no ``nvidia.com/gpu`` in their allocatable: each one's 8 GPUs
are devices in a ResourceSlice of NVIDIA's DRA driver (as ``tests/draslices.py`` builds
them), so every node is in scope through its slice, which the exporter lists and watches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labeler.core.profiles import oci_rdma  # noqa: E402

KEYS = oci_rdma().topology.keys
OWNED = "topology-labeler.io/owned-labels"


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def labels_for(i: int) -> dict[str, str]:
    full = {KEYS[0]: h("island-0"), KEYS[1]: h(f"nb-{i // 1000}"), KEYS[2]: h(f"lb-{i // 100}")}
    r = i % 100
    if r < 2:
        return {}
    if r < 5:
        return {KEYS[0]: full[KEYS[0]], KEYS[1]: full[KEYS[1]]}
    return full


def run_fake(nodes: int, latency_ms: float, kubeconfig: Path, dra: bool) -> int:
    """The fake API server process: seed, serve, print the URL, wait for SIGTERM."""
    from tests.draslices import gpu_slice
    from tests.fakekube import FakeKube

    fake = FakeKube(latency_ms=latency_ms)
    fake.seed_nodes(
        nodes,
        labels_fn=labels_for,
        allocatable=None if dra else {"nvidia.com/gpu": "8"},
        annotations={OWNED: ",".join(KEYS)},
    )
    for i in range(nodes if dra else 0):
        fake.add_object("ResourceSlice", gpu_slice(f"node-{i:05d}", 8))
    fake.start()
    fake.write_kubeconfig(kubeconfig)
    print(fake.url, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    fake.stop()
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metrics(url: str) -> dict[str, float]:
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    out = {}
    for m in re.finditer(r'^topology_labeler_nodes\{.*state="(\w+)"\} (\S+)$', text, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def rss_mb(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        fields[k] = v.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def patch_labels(api: str, node: str, labels: dict[str, str | None]) -> None:
    body = json.dumps({"metadata": {"labels": labels}}).encode()
    req = urllib.request.Request(
        f"{api}/api/v1/nodes/{node}",
        data=body,
        method="PATCH",
        headers={"Content-Type": "application/merge-patch+json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()


def wait(cond, timeout: float) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if cond():
            return time.perf_counter() - start
        time.sleep(0.005)
    raise SystemExit(f"timed out after {timeout}s")


def in_process_recompute(nodes: int) -> float:
    from labeler.core.node import NodeInfo
    from labeler.core.scope import Scope
    from labeler.core.states import build_report, node_facts

    prof = oci_rdma()
    infos = [
        NodeInfo(
            name=f"node-{i:05d}",
            labels=labels_for(i),
            annotations={OWNED: ",".join(KEYS)},
            allocatable={"nvidia.com/gpu": "8"},
        )
        for i in range(nodes)
    ]
    facts = [f for n in infos if (f := node_facts(prof.topology, Scope(), n)) is not None]
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        build_report(prof.name, "x", prof.topology, facts)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--changes", type=int, default=10, help="single label changes to time")
    ap.add_argument("--burst", type=int, default=200, help="label changes in one burst")
    ap.add_argument("--dra", action="store_true", help="GPUs only in DRA ResourceSlices")
    ap.add_argument("--fake", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kubeconfig", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fake:
        return run_fake(args.nodes, args.latency_ms, args.kubeconfig, args.dra)

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    kubeconfig = tmp / "kubeconfig"
    fake = subprocess.Popen(
        [sys.executable, __file__, "--fake", "--nodes", str(args.nodes),
         "--latency-ms", str(args.latency_ms), "--kubeconfig", str(kubeconfig),
         *(["--dra"] if args.dra else [])],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    exporter = None
    try:
        t = time.perf_counter()
        api = (fake.stdout.readline() if fake.stdout else "").strip()
        print(f"fake API server with {args.nodes} nodes at {api} ({time.perf_counter() - t:.1f}s)")

        t = time.perf_counter()
        one = subprocess.run(
            [sys.executable, "-m", "labeler", "audit", "--profile", "oci-rdma", "-o", "json",
             "--kubeconfig", str(kubeconfig)],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        one_shot = time.perf_counter() - t
        counts = json.loads(one.stdout)["counts"]
        print(f"one-shot audit: {one_shot:.2f}s exit={one.returncode} counts={counts}")

        port = free_port()
        url = f"http://127.0.0.1:{port}"
        t0 = time.perf_counter()
        exporter = subprocess.Popen(
            [sys.executable, "-m", "labeler", "audit", "--serve", "--profile", "oci-rdma",
             "--bind", "127.0.0.1", "--port", str(port), "--kubeconfig", str(kubeconfig),
             "--log-level", "warning"],
            env=env,
        )  # fmt: skip
        wait(lambda: sum(metrics(url).values()) == args.nodes, 60)
        first = time.perf_counter() - t0
        print(f"exporter: first complete metrics after {first:.2f}s (target < 10 s)")
        assert metrics(url) == {k: float(v) for k, v in counts.items()}, metrics(url)
        rss, peak = rss_mb(exporter.pid)
        print(f"exporter RSS after first sync: {rss:.0f} MB (peak {peak:.0f} MB; target < 200)")

        latencies = []
        base = metrics(url)["partial"]
        for i in range(args.changes):
            node = f"node-{(i * 97 + 10) % args.nodes:05d}"
            if labels_for(int(node[5:])).get(KEYS[2]) is None:
                continue
            patch_labels(api, node, {KEYS[2]: None})
            latencies.append(wait(lambda b=base: metrics(url)["partial"] == b + 1, 10))
            patch_labels(api, node, {KEYS[2]: labels_for(int(node[5:]))[KEYS[2]]})
            latencies.append(wait(lambda b=base: metrics(url)["partial"] == b, 10))
        print(
            f"update latency over {len(latencies)} changes: median "
            f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms"
        )

        burst_nodes = [f"node-{i:05d}" for i in range(args.nodes) if labels_for(i).get(KEYS[2])][
            : args.burst
        ]
        t = time.perf_counter()
        for node in burst_nodes:
            patch_labels(api, node, {KEYS[2]: None})
        sent = time.perf_counter() - t
        after = wait(lambda: metrics(url)["partial"] == base + len(burst_nodes), 30)
        print(
            f"burst of {len(burst_nodes)} label removals: sent in {sent:.2f}s, all reflected "
            f"{after * 1000:.0f} ms after the last"
        )
        rss, peak = rss_mb(exporter.pid)
        print(f"exporter RSS at the end: {rss:.0f} MB (peak {peak:.0f} MB)")
        print(
            f"in-process recomputation (build_report) of {args.nodes} nodes: "
            f"{in_process_recompute(args.nodes) * 1000:.0f} ms (median of 5)"
        )
    finally:
        for proc in (exporter, fake):
            if proc is not None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
