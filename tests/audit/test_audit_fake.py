"""audit, the exporter and placement against the fake API server, over HTTP with the real
client: states of a mixed cluster, label changes reflected through the watch, 410 handled
by re-listing, and an RBAC failure that names the verb and the resource."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

import pytest

from labeler.audit.options import ExporterOptions
from labeler.audit.serve import AuditExporter
from labeler.cli import main
from labeler.core.node import OWNED_ANNOTATION
from labeler.core.profiles import oci_rdma
from labeler.core.scope import Scope
from tests.audit.exporters import running
from tests.fakekube import FakeKube
from tests.helpers import wait_for

PROFILE = oci_rdma()
ISLAND, NETWORK, LOCAL = PROFILE.topology.keys
GPU8 = {"nvidia.com/gpu": "8"}
OWNED = {OWNED_ANNOTATION: ",".join(PROFILE.topology.keys)}


def full(i: str, n: str, lo: str) -> dict[str, str]:
    return {ISLAND: i, NETWORK: n, LOCAL: lo}


@pytest.fixture
def fake(fake_kube: FakeKube) -> FakeKube:
    return fake_kube


def seed_mixed(fk: FakeKube) -> None:
    fk.add_object(
        "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    )
    fk.add_node("gpu-a1", labels=full("i1", "n1", "l1"), annotations=OWNED, allocatable=GPU8)
    fk.add_node("gpu-a2", labels=full("i1", "n1", "l1"), annotations=OWNED, allocatable=GPU8)
    fk.add_node("gpu-b1", labels={ISLAND: "i1", NETWORK: "n1"}, annotations=OWNED, allocatable=GPU8)
    fk.add_node("gpu-c1", allocatable={"nvidia.com/gpu": "4"})
    fk.add_node("gpu-d1", labels=full("i1", "n2", "l9"), annotations=OWNED, allocatable=GPU8)
    fk.add_node("gpu-d2", labels=full("i1", "n3", "l9"), allocatable=GPU8)  # set by hand
    fk.add_node("npu-e1", allocatable={"huawei.com/Ascend910": "16"})
    fk.add_node("cpu-1")  # out of scope


def run_cli(
    fk: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, str, str]:
    kubeconfig = fk.write_kubeconfig(tmp_path / "kubeconfig")
    code = main([*argv, "--kubeconfig", str(kubeconfig)])
    out, err = capsys.readouterr()
    return code, out, err


def test_one_shot_audit_of_a_mixed_cluster(
    fake: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_mixed(fake)
    code, out, _ = run_cli(fake, tmp_path, capsys, "audit", "--profile", "oci-rdma", "-o", "json")
    assert code == 3  # done, and some node in scope is not fully labeled
    doc = json.loads(out)
    assert doc["nodesInScope"] == 7
    assert doc["counts"] == {"labeled": 2, "partial": 1, "unlabeled": 2, "inconsistent": 2}
    assert doc["nodes"]["unlabeled"] == ["gpu-c1", "npu-e1"]
    assert doc["missing"] == {"gpu-b1": ["local_block"]}
    assert list(doc["foreignLabels"]) == ["gpu-d2"]
    assert doc["unlabeledAccelerators"] == {"huawei.com/Ascend910": 16, "nvidia.com/gpu": 12}

    code, out, _ = run_cli(fake, tmp_path, capsys, "audit", "--profile", "oci-rdma")
    assert code == 3
    assert "gpu-b1  local_block" in out
    assert "verdict: 5 of 7 node(s) in scope are not fully labeled" in out

    # Scoped to the fully labeled pair by a node selector: exit 0.
    fake.set_node_labels("gpu-a1", {"pool": "a"})
    fake.set_node_labels("gpu-a2", {"pool": "a"})
    code, out, _ = run_cli(
        fake, tmp_path, capsys, "audit", "--profile", "oci-rdma", "--node-selector", "pool=a"
    )
    assert code == 0, out
    assert "2 node(s) in scope (nodes matching pool=a)" in out


def test_forbidden_list_names_the_verb_and_resource(
    fake: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_mixed(fake)
    fake.faults.add(method="GET", path="/api/v1/nodes", status=403, times=None)
    code, _, err = run_cli(fake, tmp_path, capsys, "audit", "--profile", "oci-rdma")
    assert code == 1
    assert "list nodes: 403 Forbidden: the RBAC role lacks 'list' on 'nodes'" in err

    exporter = AuditExporter(fake.cluster(), PROFILE, Scope())
    with running(fake, exporter, serve=False):
        wait_for(lambda: "403" in exporter.readyz()[1], what="readyz to report the 403")
        ok, text = exporter.readyz()
        assert not ok and "lacks 'list' on 'nodes'" in text
        assert exporter.healthz()[0]  # alive, retrying: a restart would not help


# --- the exporter ---------------------------------------------------------------------


def scrape(url: str) -> dict[str, float]:
    """Parse the exposition text into {series(name, labels): value}."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            head, _, value = line.rpartition(" ")
            name, _, rest = head.partition("{")
            pairs = dict(re.findall(r'(\w+)="([^"]*)"', rest))
            out[series(name, **pairs)] = float(value)
    return out


def series(name: str, **labels: str) -> str:
    """A series key independent of the label order of the exposition."""
    return name + "".join(f",{k}={v}" for k, v in sorted(labels.items()))


def nodes_metric(state: str) -> str:
    return series("topology_labeler_nodes", profile="oci-rdma", state=state)


GPU_UNUSABLE = series(
    "topology_labeler_unlabeled_accelerators", profile="oci-rdma", resource="nvidia.com/gpu"
)


def test_exporter_publishes_states_and_follows_label_changes(
    fake: FakeKube, exporter: tuple[AuditExporter, str]
) -> None:
    exp, url = exporter
    seed_mixed(fake)  # after start: also exercises ADDED events (or the first list)
    wait_for(lambda: exp.readyz()[0], what="ready")
    m = wait_for(
        lambda: (s := scrape(url)).get(nodes_metric("labeled")) == 2 and s,
        what="the mixed cluster in the metrics",
    )
    assert m[nodes_metric("partial")] == 1
    assert m[nodes_metric("unlabeled")] == 2
    assert m[nodes_metric("inconsistent")] == 2
    assert m[GPU_UNUSABLE] == 12
    local = {"profile": "oci-rdma", "level": "local_block"}
    assert m[series("topology_labeler_nesting_violations", **local)] == 1
    assert m[series("topology_labeler_domains", **local)] == 2
    assert m[series("topology_labeler_foreign_labeled_nodes", profile="oci-rdma")] == 1
    assert m["topology_labeler_audit_last_sync_timestamp_seconds"] > time.time() - 60
    assert not any(",node=" in k for k in m)  # no per-node series

    # A label removed: the node becomes partial within a second or so.
    started = time.monotonic()
    fake.set_node_labels("gpu-a1", {LOCAL: None})
    wait_for(lambda: scrape(url).get(nodes_metric("partial")) == 2, what="gpu-a1 to turn partial")
    assert time.monotonic() - started < 2.0
    assert scrape(url)[GPU_UNUSABLE] == 20
    # Labels added: the unlabeled node becomes labeled.
    fake.set_node_labels("gpu-c1", full("i1", "n1", "l1"))
    wait_for(lambda: scrape(url).get(nodes_metric("unlabeled")) == 1, what="gpu-c1 to turn labeled")
    # A node deleted leaves the scope.
    fake.delete_node("npu-e1")
    wait_for(lambda: scrape(url).get(nodes_metric("unlabeled")) == 0, what="npu-e1 gone")
    with urllib.request.urlopen(url + "/healthz", timeout=5) as resp:
        assert resp.status == 200


def test_exporter_relists_after_410(fake: FakeKube) -> None:
    fake.store.history = 5  # keep only a few events, as a compacted etcd would
    seed_mixed(fake)
    exp = AuditExporter(fake.cluster(), PROFILE, Scope(), options=ExporterOptions(watch_timeout=1))
    with running(fake, exp, serve=False):
        wait_for(lambda: exp.report is not None, what="first list")
        assert exp.counters.relists._value.get() == 1
        # Hold the next watch request until more changes than the history have happened.
        fault = fake.faults.add(method="GET", path="/api/v1/nodes", delay=1.0, times=1)
        wait_for(lambda: fault.hits == 1, timeout=5, what="the watch to be renewed")
        for i in range(10):
            fake.add_node(f"late-{i}", allocatable=GPU8)
        wait_for(lambda: exp.counters.relists._value.get() == 2, what="a re-list after 410")
        assert exp.counters.errors.labels("expired")._value.get() == 1
        wait_for(
            lambda: exp.report is not None and exp.report.counts()["unlabeled"] == 12,
            what="the late nodes in the report",
        )


# --- placement ------------------------------------------------------------------------


def test_placement_shows_each_pods_domains_and_a_verdict(
    fake: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_mixed(fake)
    fake.add_node("gpu-a3", labels=full("i1", "n2", "l2"), allocatable=GPU8)
    for i, node in enumerate(["gpu-a1", "gpu-a2", "gpu-a1", "gpu-a2"]):
        fake.add_pod(f"train-{i}", namespace="ml", node_name=node, labels={"job-name": "train"})
    fake.add_pod("train-4", namespace="ml", labels={"job-name": "train"}, phase="Pending")
    fake.add_pod("other", namespace="ml", node_name="gpu-a3", labels={"job-name": "other"})
    code, out, _ = run_cli(fake, tmp_path, capsys, "placement", "-l", "job-name=train", "-n", "ml")
    assert code == 0
    assert out.splitlines()[0].split() == [
        "POD",
        "PHASE",
        "NODE",
        "HPC_ISLAND",
        "NETWORK_BLOCK",
        "LOCAL_BLOCK",
    ]
    assert "train-4  Pending  <pending>" in out
    assert out.strip().endswith(
        "all 4 pod(s) on 2 node(s) in 1 local_block; 1 pod(s) pending (not scheduled)"
    )

    fake.add_pod("train-5", namespace="ml", node_name="gpu-a3", labels={"job-name": "train"})
    code, out, _ = run_cli(
        fake, tmp_path, capsys, "placement", "-l", "job-name=train", "-o", "json"
    )
    doc = json.loads(out)
    assert doc["verdict"].startswith(
        "5 pod(s) on 3 node(s) split across 2 local_blocks, 2 network_blocks; all in 1 hpc_island"
    )
    assert {p["name"]: p["domains"]["local_block"] for p in doc["pods"]}["train-5"] == "l2"


def test_exporter_threads_end_after_stop(fake: FakeKube) -> None:
    seed_mixed(fake)
    fake.bookmark_interval = 0.2  # a real server sends one about every minute
    exp = AuditExporter(fake.cluster(), PROFILE, Scope())
    exp.start()
    wait_for(lambda: exp.readyz()[0], what="ready")
    exp.stop()
    assert exp.join(timeout=5), "an exporter thread is still running after stop()"
    assert exp.healthz()[0]  # stopping is not a failure
