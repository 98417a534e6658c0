"""Faults made with the real components, each on a control plane of the test's own: the API
server killed in the middle of an ``apply``, and etcd restarted under a running agent and a
running exporter."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from tests.e2e.fake_imds import RDMA, FakeImds, rdma_doc
from tests.helpers import wait_for
from tests.realkube import cluster, processes
from tests.realkube.controlplane import ControlPlane
from tests.realkube.test_bulk_real import KEYS, names, summary, write_csv
from tests.realkube.test_plugin_audit_real import GPU, unlabeled

N = 600


def labeled_count(plane: ControlPlane) -> int:
    done = plane.kubectl("get", "nodes", "-l", KEYS[0], "-o", "name", check=False)
    return len(done.stdout.split()) if done.returncode == 0 else -1


def oci_labels(plane: ControlPlane, node: str) -> dict[str, str]:
    return {k: v for k, v in cluster.labels_of(plane, node).items() if k.startswith("oci.")}


def test_api_server_killed_mid_apply(own_real_kube: ControlPlane, tmp_path: Path) -> None:
    plane = own_real_kube
    made = names("rf", N)
    cluster.create_nodes(plane, made, tmp_path, "rf")
    csv = write_csv(tmp_path / "cluster.csv", made)
    log = tmp_path / "apply.log"
    args = ("apply", "--config-path", str(csv), "--concurrency", "2")
    with processes.running(log, *args, kubeconfig=plane.kubeconfig) as run:
        wait_for(lambda: labeled_count(plane) >= N // 5, timeout=120, what="apply under way")
        plane.kill("kube-apiserver")
        time.sleep(3)
        plane.restart("kube-apiserver")
        code = run.wait(timeout=600)
    rows, counts, _ = summary(log.read_text())
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
    # server and could not be settled is reported failed, never labeled or unchanged.
    labeled = counts.get("labeled", 0)
    assert labeled <= len(written) <= labeled + counts.get("failed", 0)
    assert (code == 0) == (len(written) == N == labeled)

    again = processes.cli("apply", "--config-path", str(csv), kubeconfig=plane.kubeconfig)
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
    with FakeImds() as imds:
        imds.set("re-gpu-1", RDMA, rdma_doc("island", "nb", "lb", "host"))
        agent_args = ("agent", "--profile", "oci-rdma", "--node-name", "re-gpu-1",
                      "--imds-url", imds.url_for("re-gpu-1"), "--port", "0")  # fmt: skip
        agent_log = tmp_path / "agent.log"
        with (
            processes.running(agent_log, *agent_args, kubeconfig=plane.kubeconfig) as agent,
            processes.exporter(tmp_path / "audit.log", plane.kubeconfig) as url,
        ):
            ours = wait_for(lambda: oci_labels(plane, "re-gpu-1"), timeout=30, what="labels")
            wait_for(lambda: unlabeled(url) == 1, timeout=30, what="the exporter's first count")
            plane.kill("etcd", signal.SIGTERM)
            time.sleep(5)
            plane.restart("etcd")
            # Both watches must be back: a new node and a tampered label are seen at once.
            cluster.add_node(plane, "re-gpu-3", allocatable=GPU)
            wait_for(lambda: unlabeled(url) == 2, timeout=20, what="the count after the restart")
            key = next(iter(ours))
            plane.kubectl("label", "node", "re-gpu-1", f"{key}=tampered", "--overwrite")
            wait_for(
                lambda: oci_labels(plane, "re-gpu-1").get(key) == ours[key],
                timeout=30,
                what="the agent repairing drift after etcd's restart",
            )
            assert oci_labels(plane, "re-gpu-1") == ours
            assert agent.poll() is None, "the agent died during etcd's restart"
            assert unlabeled(url) is not None, "the exporter died during etcd's restart"
    assert " remove " not in agent_log.read_text(), agent_log.read_text()[-3000:]
