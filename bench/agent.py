"""Benchmark the node agent as a real process against the fake API server and fake IMDS.

Measures, per run:
- start → labeled: from spawning the process until every level label is on the node
  (polled in the fake's store, so the polling sends no API request);
- peak RSS (VmHWM) of the agent process after the steady state;
- API requests during the steady state, by verb (target: 0 patch, 0 list), and the IMDS
  re-reads in that time (they must not cause writes);
- SIGTERM → exit.

    python bench/agent.py [--runs 3] [--steady-seconds 60] [--interval 10] [--latency-ms 0]

Run from the repository root (or anywhere: the root is put on sys.path).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labeler.core.profiles import oci_rdma  # noqa: E402
from tests.e2e.fake_imds import RDMA, FakeImds, rdma_doc  # noqa: E402
from tests.fakekube import FakeKube  # noqa: E402

LEVELS = oci_rdma().level_keys


def rdma_reads(imds: FakeImds, node: str) -> int:
    """Source reads, counted by their first document (a read also asks /host for the RDMA
    fabric data that oci-hpc-oke's extra labels come from)."""
    return sum(1 for s in imds.requests_for(node) if s.path == RDMA)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_run(args: argparse.Namespace, run: int, tmp: Path) -> dict[str, float]:
    node = f"gpu-{run}"
    with FakeKube(latency_ms=args.latency_ms) as fake, FakeImds() as imds:
        fake.seed_nodes(args.nodes, name_fmt="other-{:05d}")
        fake.add_node(node)
        imds.set(node, RDMA, rdma_doc("i", "nb", "lb", node))
        kubeconfig = fake.write_kubeconfig(tmp / f"kubeconfig-{run}")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [
            sys.executable,
            "-m",
            "labeler",
            "agent",
            "--profile=oci-rdma",
            f"--kubeconfig={kubeconfig}",
            f"--node-name={node}",
            f"--imds-url={imds.url_for(node)}",
            f"--interval={args.interval}",
            "--port=0",
            "--log-level=warning",
        ]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        try:
            while True:
                labels = fake.get_node(node)["metadata"].get("labels") or {}
                if all(k in labels for k in LEVELS):
                    break
                if proc.poll() is not None or time.perf_counter() - start > 30:
                    raise SystemExit(f"agent did not label the node: {proc.stderr}")
                time.sleep(0.002)
            labeled = time.perf_counter() - start
            time.sleep(1.0)  # let the watch deliver our own write, then measure the quiet
            fake.clear_journal()
            imds_before = rdma_reads(imds, node)
            time.sleep(args.steady_seconds)
            counts = fake.counts()
            imds_reads = rdma_reads(imds, node) - imds_before
            rss = peak_rss_mb(proc.pid)
            stop = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
            stopped = time.perf_counter() - stop
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return {
        "start_to_labeled_s": labeled,
        "peak_rss_mb": rss,
        "steady_patch": counts.get("patch", 0),
        "steady_list": counts.get("list", 0),
        "steady_get": counts.get("get", 0),
        "steady_watch": counts.get("watch", 0),
        "steady_other": sum(
            v for k, v in counts.items() if k not in ("patch", "list", "get", "watch")
        ),
        "steady_imds_reads": imds_reads,
        "sigterm_to_exit_s": stopped,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--steady-seconds", type=float, default=60.0)
    ap.add_argument("--interval", type=float, default=10.0, help="agent IMDS re-read interval")
    ap.add_argument("--nodes", type=int, default=1000, help="other nodes in the fake cluster")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="fake API latency")
    args = ap.parse_args()
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-agent-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    results = [one_run(args, i, tmp) for i in range(args.runs)]
    print(
        f"agent benchmark: {args.runs} runs, steady state {args.steady_seconds:.0f} s, "
        f"interval {args.interval:.0f} s, {args.nodes} other nodes, "
        f"API latency {args.latency_ms:.0f} ms, load average {os.getloadavg()[0]:.1f}"
    )
    for key in results[0]:
        values = [r[key] for r in results]
        print(
            f"  {key:22s} median {statistics.median(values):8.3f}   "
            f"min {min(values):8.3f}   max {max(values):8.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
