"""Faults made with the real components, each on a control plane of the test's own: the API
server killed in the middle of an ``apply``, and etcd restarted under a running agent and a
running exporter."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.fake_imds import RDMA, FakeImds, rdma_doc
from tests.helpers import cli_env, free_port, http_get, wait_for
from tests.realkube import cluster
from tests.realkube.controlplane import ControlPlane
from tests.realkube.test_bulk_real import KEYS, bulk, names, summary, write_csv
from tests.realkube.test_plugin_audit_real import GPU, metric

N = 600


def labeled_count(plane: ControlPlane) -> int:
    done = plane.kubectl("get", "nodes", "-l", KEYS[0], "-o", "name", check=False)
    return len(done.stdout.split()) if done.returncode == 0 else -1


def test_api_server_killed_mid_apply(own_real_kube: ControlPlane, tmp_path: Path) -> None:
    plane = own_real_kube
    made = names("rf", N)
    listing = tmp_path / "nodes.json"
    listing.write_text(
        json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": [cluster.node_body(n) for n in made]}
        )
    )
    plane.kubectl("create", "-f", str(listing))
    csv = write_csv(tmp_path / "cluster.csv", made)
    env = cli_env()
    env.pop("KUBECONFIG", None)
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "labeler",
            "apply",
            "--config-path",
            str(csv),
            "--concurrency",
            "2",
            "--kubeconfig",
            str(plane.kubeconfig),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(
        lambda: labeled_count(plane) >= N // 5, timeout=120, what="apply under way", interval=0.2
    )
    plane.kill("kube-apiserver")
    time.sleep(3)
    plane.restart("kube-apiserver")
    out, err = run.communicate(timeout=600)
    rows, counts, _ = summary(out + err)
    assert rows == N and sum(counts.values()) == N, counts

    nodes = json.loads(plane.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    want = {name: (str(i // 48), str(i // 384)) for i, name in enumerate(made)}
    written = set()
    for node in nodes:
        name, labels = node["metadata"]["name"], node["metadata"].get("labels", {})
        got = tuple(labels.get(k) for k in KEYS)
        assert got in ((None, None), want[name]), f"{name} is half-written: {got}"
        if got == want[name]:
            written.add(name)
    # What the summary calls labeled is on the node; a node whose answer was lost with the
    # server may have been written all the same, and is then reported failed, never labeled.
    assert (
        counts.get("labeled", 0)
        <= len(written)
        <= counts.get("labeled", 0) + counts.get("failed", 0)
    )
    assert (run.returncode == 0) == (len(written) == N == counts.get("labeled"))

    again = bulk(plane, "apply", "--config-path", str(csv))
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    _, counts, _ = summary(again.stdout + again.stderr)
    assert counts.get("labeled", 0) + counts.get("unchanged", 0) == N
    assert labeled_count(plane) == N


def test_etcd_restarted_under_an_agent_and_an_exporter(
    own_real_kube: ControlPlane, tmp_path: Path
) -> None:
    plane = own_real_kube
    for name in ("re-gpu-1", "re-gpu-2"):
        cluster.add_node(plane, name, allocatable=GPU)
    env = cli_env()
    env.pop("KUBECONFIG", None)
    port = free_port()
    with FakeImds() as imds:
        imds.set("re-gpu-1", RDMA, rdma_doc("island", "nb", "lb", "host"))
        logs = {name: (tmp_path / f"{name}.log").open("w") for name in ("agent", "audit")}
        procs = {
            "agent": subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "labeler",
                    "agent",
                    "--profile",
                    "oci-rdma",
                    "--node-name",
                    "re-gpu-1",
                    "--kubeconfig",
                    str(plane.kubeconfig),
                    "--imds-url",
                    imds.url_for("re-gpu-1"),
                    "--port",
                    "0",
                ],
                env=env,
                stdout=logs["agent"],
                stderr=subprocess.STDOUT,
            ),
            "audit": subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "labeler",
                    "audit",
                    "--profile",
                    "oci-rdma",
                    "--serve",
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--kubeconfig",
                    str(plane.kubeconfig),
                ],
                env=env,
                stdout=logs["audit"],
                stderr=subprocess.STDOUT,
            ),
        }
        url = f"http://127.0.0.1:{port}/metrics"

        def state(which: str) -> float | None:
            status, body = http_get(url)
            if status != 200:
                return None
            return sum(
                v
                for k, v in metric(body, "topology_labeler_nodes").items()
                if f'state="{which}"' in k
            )

        try:
            ours = wait_for(
                lambda: {
                    k: v
                    for k, v in cluster.labels_of(plane, "re-gpu-1").items()
                    if k.startswith("oci.")
                },
                timeout=30,
                what="the agent's labels",
            )
            wait_for(lambda: state("unlabeled") == 1, timeout=30, what="the exporter's first count")
            plane.kill("etcd", signal.SIGTERM)
            time.sleep(5)
            plane.restart("etcd")
            plane.wait_ready()
            # Both watches must be back: a new node and a tampered label are seen at once.
            cluster.add_node(plane, "re-gpu-3", allocatable=GPU)
            wait_for(
                lambda: state("unlabeled") == 2,
                timeout=20,
                what="the exporter's count after etcd's restart",
            )
            key = next(iter(ours))
            plane.kubectl("label", "node", "re-gpu-1", f"{key}=tampered", "--overwrite")
            wait_for(
                lambda: cluster.labels_of(plane, "re-gpu-1").get(key) == ours[key],
                timeout=30,
                what="the agent repairing drift after etcd's restart",
            )
            assert {
                k: v
                for k, v in cluster.labels_of(plane, "re-gpu-1").items()
                if k.startswith("oci.")
            } == ours
            for proc in procs.values():
                assert proc.poll() is None, "a process died during etcd's restart"
        finally:
            for proc in procs.values():
                proc.terminate()
                proc.wait(timeout=30)
            for log in logs.values():
                log.close()
    agent_log = (tmp_path / "agent.log").read_text()
    assert " remove " not in agent_log, agent_log[-3000:]
