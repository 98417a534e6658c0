"""Benchmark: labelling nodes on a real kube-apiserver, and the agent's steady state there.

    .venv/bin/python bench/realkube.py bulk [--nodes 10000] [--concurrency 16]
        [--kubectl-sample 200] [--images 20] [--rounds 1]
    .venv/bin/python bench/realkube.py agent [--seconds 600] [--nodes 300] [--interval S]

Both start etcd and kube-apiserver from ``scripts/control-plane.sh build``'s binaries
(built first if missing) with ``tests.realkube.controlplane.ControlPlane``, in a folder of
their own, and stop them at the end. Neither the scheduler nor KWOK is started: the nodes
made here are not managed by KWOK (no ``kwok.x-k8s.io/node`` annotation), so nothing but the
client under test writes to them, and the server's CPU is the work that client causes.

``bulk`` creates NODES Node objects, each with a kubelet-like status (capacity,
conditions, addresses, nodeInfo and IMAGES container images), and labels them with two
labels (huawei.com/topotree.groupid, huawei.com/topotree) at the same concurrency:

1. ``topology-labeler apply`` as a user runs it: cold (the labels are new), warm (the same
   CSV again: nothing to write), changed (every value different: a full write by a process
   whose server, caches and bytecode are warm);
2. ``kubectl label nodes NAME --overwrite k=v k=v``, one process per node, on the first
   SAMPLE nodes: CONCURRENCY processes at a time, and one at a time (MindCluster's method);
   both scaled up to NODES (said so in the table);
3. bench/clientgo (k8s.io/client-go, the practical limit), built by bench/clientgo/build.sh:
   the same three runs as apply (it does not diff, so its "unchanged" run writes everything
   again and the server finds nothing changed).

Between methods the two labels are removed from every node touched, so each method does the
same work. ``--rounds`` repeats the set, apply and clientgo taking turns to go first, so that
a change in the machine's load does not favour one of them.

For each run: wall time, the client's CPU (user + sys of the child processes,
from ``getrusage(RUSAGE_CHILDREN)``), kube-apiserver's and etcd's CPU over the same interval
(``/proc/PID/stat``), and the API server's count of node requests by verb (its
``apiserver_request_total``, read with ``kubectl get --raw /metrics`` just outside the
interval). Every client runs as the admin (``system:masters``), which API Priority and
Fairness exempts. Prints a markdown table.

``agent`` runs ``topology-labeler agent --profile oci-rdma`` for one node against the real
API server with NODES other nodes present and the loopback fake IMDS
(tests/e2e/fake_imds.py), as a user of its own (bound to cluster-admin, and in a FlowSchema
of its own so that API Priority and Fairness counts its requests apart from the server's
own). Once the node is labelled and the agent has settled, it samples the agent's RSS every
10 s for SECONDS, and reports the API server's requests by verb and resource over that time,
the agent's own count (the FlowSchema's dispatched requests), and the CPU of the agent and
the server.

Not a test: run it by hand and copy the figures into bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.realkube_agent import run_agent  # noqa: E402
from bench.realkube_bulk import run_bulk  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    bulk = sub.add_parser("bulk", help="label NODES nodes three ways")
    bulk.add_argument("--nodes", type=int, default=10_000)
    bulk.add_argument("--concurrency", type=int, default=16, help="the same for every method")
    bulk.add_argument("--kubectl-sample", type=int, default=200, help="nodes kubectl labels")
    bulk.add_argument(
        "--images", type=int, default=20, help="container images in each node's status"
    )
    bulk.add_argument("--rounds", type=int, default=1, help="repeat the whole set")
    bulk.add_argument("--workdir", type=Path, default=None, help="default: a new folder in /tmp")
    agent = sub.add_parser("agent", help="the agent's steady state")
    agent.add_argument("--seconds", type=float, default=600.0, help="length of the steady state")
    agent.add_argument("--nodes", type=int, default=300, help="other nodes in the cluster")
    agent.add_argument(
        "--images", type=int, default=20, help="container images in each node's status"
    )
    agent.add_argument(
        "--interval",
        type=float,
        default=None,
        help="the agent's IMDS re-read interval (default: its own)",
    )
    agent.add_argument("--workdir", type=Path, default=None, help="default: a new folder in /tmp")
    args = ap.parse_args()
    if args.workdir is None:
        args.workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-realkube-{os.getpid()}"
    args.workdir.mkdir(parents=True, exist_ok=True)
    # Byte-compile the tree first, as `pip install` does: PYTHONDONTWRITEBYTECODE (set on these
    # machines) would otherwise make every run of ours compile every module it imports.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "labeler")], check=True)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    if args.what == "bulk":
        run_bulk(args)
    else:
        run_agent(args)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
