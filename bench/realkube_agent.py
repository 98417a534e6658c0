"""bench/realkube.py agent: the agent's steady-state requests and memory on a real API
server; see bench/realkube.py."""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time

from bench.realkube_plane import (
    ROOT,
    Admin,
    delta,
    metric_lines,
    proc_cpu,
    request_counts,
    rss_mb,
    start_plane,
)
from labeler.core.profiles import oci_rdma
from tests.e2e.fake_imds import RDMA, FakeImds, rdma_doc
from tests.realkube.controlplane import ControlPlane

NODE = "gpu-0"
USER = "bench-agent"
# The agent's requests in a FlowSchema of their own: API Priority and Fairness counts what it
# dispatches per FlowSchema, which tells the agent's requests from the server's own loopback
# clients (leases, its controllers), which apiserver_request_total does not.
FLOW_SCHEMA = f"""
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: {USER}
spec:
  priorityLevelConfiguration:
    name: workload-low
  matchingPrecedence: 100
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: User
      user:
        name: {USER}
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      clusterScope: true
      namespaces: ["*"]
    nonResourceRules:
    - verbs: ["*"]
      nonResourceURLs: ["*"]
"""
DISPATCHED = re.compile(
    r'^apiserver_flowcontrol_dispatched_requests_total\{[^}]*flow_schema="'
    + USER
    + r'"[^}]*\} (\S+)$'
)


def dispatched(lines: list[str]) -> int:
    return sum(int(float(m[1])) for line in lines if (m := DISPATCHED.match(line)))


def agent_identity(plane: ControlPlane) -> str:
    """A kubeconfig for USER, bound to cluster-admin (not system:masters, which API Priority
    and Fairness exempts and so does not count per FlowSchema)."""
    kubeconfig = plane.user_kubeconfig(USER, USER)
    plane.kubectl(
        "create", "clusterrolebinding", USER, "--clusterrole=cluster-admin", f"--user={USER}"
    )
    plane.kubectl("apply", "-f", "-", input=FLOW_SCHEMA)
    return str(kubeconfig)


def start_agent(args: argparse.Namespace, kubeconfig: str, imds: FakeImds) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "labeler",
        "agent",
        "--profile=oci-rdma",
        f"--kubeconfig={kubeconfig}",
        f"--node-name={NODE}",
        f"--imds-url={imds.url_for(NODE)}",
        "--port=0",
        "--log-level=warning",
    ]
    if args.interval is not None:
        cmd.append(f"--interval={args.interval}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Its log goes to a file: a pipe nobody reads for 10 minutes could fill and stop it.
    with (args.workdir / "agent.log").open("w") as log:
        return subprocess.Popen(cmd, env=env, cwd=ROOT, stderr=log, text=True)


def wait_labelled(admin: Admin, agent: subprocess.Popen[str]) -> float:
    levels = oci_rdma().level_keys
    start = time.monotonic()
    while not all(k in admin.labels(NODE) for k in levels):
        if agent.poll() is not None:
            raise SystemExit(
                f"the agent exited ({agent.returncode}); see its log in the work folder"
            )
        if time.monotonic() - start > 60:
            raise SystemExit("the agent did not label its node within 60 s")
        time.sleep(0.2)
    return time.monotonic() - start


def run_agent(args: argparse.Namespace) -> None:
    plane = start_plane(args.workdir)
    try:
        admin = Admin(plane)
        admin.create_nodes([f"other-{i:05d}" for i in range(args.nodes)] + [NODE], args.images)
        kubeconfig = agent_identity(plane)
        with FakeImds() as imds:
            imds.set(NODE, RDMA, rdma_doc("i", "nb", "lb", NODE))
            agent = start_agent(args, kubeconfig, imds)
            try:
                labelled = wait_labelled(admin, agent)
                print(f"agent labelled {NODE} {labelled:.1f} s after it started", flush=True)
                time.sleep(5)  # its own write comes back on its watch; then the quiet begins
                steady(args, plane, agent, imds)
            finally:
                agent.send_signal(signal.SIGTERM)
                try:
                    agent.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    agent.kill()
                    agent.wait()
    finally:
        plane.stop()


def steady(
    args: argparse.Namespace, plane: ControlPlane, agent: subprocess.Popen[str], imds: FakeImds
) -> None:
    api, etcd = plane.procs["kube-apiserver"].pid, plane.procs["etcd"].pid
    lines = metric_lines(plane)
    before, sent0 = request_counts(lines), dispatched(lines)
    reads0 = sum(1 for s in imds.requests_for(NODE) if s.path == RDMA)
    cpu0, api0, etcd0 = proc_cpu(agent.pid), proc_cpu(api), proc_cpu(etcd)
    start = time.monotonic()
    samples: list[float] = []
    while (elapsed := time.monotonic() - start) < args.seconds:
        samples.append(rss_mb(agent.pid))
        if agent.poll() is not None:
            raise SystemExit(f"the agent exited ({agent.returncode}) after {elapsed:.0f} s")
        time.sleep(min(10.0, max(0.0, args.seconds - elapsed)))
    samples.append(rss_mb(agent.pid))
    seconds = time.monotonic() - start
    cpu, api_cpu, etcd_cpu = (
        proc_cpu(agent.pid) - cpu0,
        proc_cpu(api) - api0,
        proc_cpu(etcd) - etcd0,
    )
    hwm = rss_mb(agent.pid, "VmHWM")
    lines = metric_lines(plane)
    counts, sent = delta(request_counts(lines), before), dispatched(lines) - sent0
    reads = sum(1 for s in imds.requests_for(NODE) if s.path == RDMA) - reads0
    minutes = seconds / 60
    print(f"steady state {seconds:.0f} s, {args.nodes} other nodes, {len(samples)} RSS samples")
    print()
    print("| figure | value |")
    print("|---|---|")
    print(
        f"| agent RSS (VmRSS, every 10 s): first / median / last / max | {samples[0]:.1f} / "
        f"{statistics.median(samples):.1f} / {samples[-1]:.1f} / {max(samples):.1f} MB |"
    )
    print(f"| agent peak RSS (VmHWM) | {hwm:.1f} MB |")
    print(f"| agent CPU (user + sys) | {cpu:.2f} s ({cpu / seconds * 100:.3f} % of a core) |")
    print(f"| agent's requests from its start until the steady state | {sent0} |")
    print(
        f"| agent's requests in the steady state (its FlowSchema's dispatched requests) "
        f"| {sent} ({sent / minutes:.2f} per minute) |"
    )
    print(f"| IMDS source reads | {reads} |")
    print(f"| kube-apiserver / etcd CPU in that time | {api_cpu:.2f} s / {etcd_cpu:.2f} s |")
    print()
    print("| API server requests in the steady state (everyone's), verb resource | count |")
    print("|---|---|")
    for (verb, res), n in sorted(counts.items()):
        print(f"| {verb} {res} | {n} |")
