"""The hot-swap view in ``audit`` and its exporter, against the fake API server: the OCI
example cluster (train-b has no spare node in its local block), a spare node that appears,
no LIST per scrape, and a cluster without Kueue."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from labeler.audit.options import ExporterOptions
from labeler.audit.serve import AuditExporter
from labeler.commands.audit import hot_swap_of, live_map
from labeler.core.profiles import oci_rdma
from labeler.core.scope import Scope
from labeler.sim.kueue.gates import Gates
from tests.audit.test_audit_fake import run_cli, scrape, series
from tests.fakekube import FakeKube
from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "snapshot-oci.yaml"
PROFILE = oci_rdma()
AT_RISK = series("topology_labeler_hotswap_workloads", cluster_queue="gpu", state="not_replaceable")
SAFE = series("topology_labeler_hotswap_workloads", cluster_queue="gpu", state="replaceable")


def load_example(fake: FakeKube) -> None:
    doc = yaml.safe_load(SNAPSHOT.read_text())
    for ns in ("team-a", "team-b", "team-c"):
        fake.add_object("Namespace", {"metadata": {"name": ns}})
    for item in doc["items"]:
        ns = item["metadata"].get("namespace")
        if ns:
            fake.add_object(item["kind"], item, namespace=ns)
        else:
            fake.add_object(item["kind"], item)


def test_one_shot_audit_lists_the_workloads_one_failure_would_evict(
    fake_kube: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example(fake_kube)
    code, out, _ = run_cli(fake_kube, tmp_path, capsys, "audit", "--profile", "oci-rdma")
    assert code == 3  # gpu-09 is partial: the node audit's verdict, as before
    assert "One node failure would evict 1 Workload(s):" in out
    assert "team-b/train-b (ClusterQueue gpu, flavor h100):" in out
    assert (
        "gpu-12: 1 pod(s) of main; in oci.oraclecloud.com/rdma.local_block_id=lb-3: "
        "0 free pod slot(s) for 1 pod(s)"
    ) in out
    code, out, _ = run_cli(
        fake_kube, tmp_path, capsys, "audit", "--profile", "oci-rdma", "-o", "json"
    )
    hot = json.loads(out)["hotSwap"]
    assert hot["byClusterQueue"] == {"gpu": {"replaceable": 1, "not_replaceable": 1, "exempt": 0}}
    assert hot["riskyNodes"] == {"gpu-11": ["team-b/train-b"], "gpu-12": ["team-b/train-b"]}


def test_audit_without_kueue_is_the_node_audit(
    fake_kube: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example(fake_kube)
    fake_kube.faults.add(path="/apis/kueue.x-k8s.io/.*", status=404, times=None)
    code, out, _ = run_cli(
        fake_kube, tmp_path, capsys, "audit", "--profile", "oci-rdma", "-o", "json"
    )
    assert code == 3 and "hotSwap" not in json.loads(out)
    code, out, _ = run_cli(fake_kube, tmp_path, capsys, "audit", "--profile", "oci-rdma")
    assert "Hot swap" not in out and "verdict:" in out


def test_audit_without_the_right_to_read_workloads_warns_and_audits_the_nodes(
    fake_kube: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example(fake_kube)
    fake_kube.faults.add(path="/apis/kueue.x-k8s.io/.*/workloads", status=403, times=None)
    code, out, err = run_cli(fake_kube, tmp_path, capsys, "audit", "--profile", "oci-rdma")
    assert code == 3 and "verdict:" in out and "Hot swap" not in out
    assert "warning: no hot-swap view: list workloads.kueue.x-k8s.io: 403" in err


@pytest.fixture
def exporter(exporter_of: Callable[..., tuple[AuditExporter, str]]) -> tuple[AuditExporter, str]:
    """The exporter with the live map and the hot-swap view, recomputed every 0.2 s."""
    return exporter_of(
        page=live_map(PROFILE, Scope()),
        hotswap=hot_swap_of(Gates()),
        options=ExporterOptions(watch_timeout=30, hotswap_interval=0.2),
    )


def test_exporter_follows_workloads_and_nodes_without_listing_per_scrape(
    fake_kube: FakeKube, exporter: tuple[AuditExporter, str]
) -> None:
    _, url = exporter
    load_example(fake_kube)
    m = wait_for(lambda: (s := scrape(url)).get(AT_RISK) == 1 and s, what="train-b at risk")
    assert m[SAFE] == 1 and m["topology_labeler_hotswap_at_risk_nodes"] == 2
    assert m["topology_labeler_hotswap_kueue_served"] == 1
    with urllib.request.urlopen(url + "/topology", timeout=5) as resp:
        page = resp.read().decode()
    assert (
        '"marks":' in page and "no spare node if one fails: team-b/train-b (gpu-11, gpu-12)" in page
    )
    lists = fake_kube.count("list")
    for _ in range(3):
        scrape(url)
    assert fake_kube.count("list") == lists  # scrapes read the watched state only

    # a free H100 node joins lb-3: one failure of train-b's nodes is now survivable
    spare = {
        "kubernetes.io/hostname": "gpu-13",
        "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
        "oci.oraclecloud.com/rdma.hpc_island_id": "island-a",
        "oci.oraclecloud.com/rdma.network_block_id": "nb-2",
        "oci.oraclecloud.com/rdma.local_block_id": "lb-3",
    }
    fake_kube.add_node(
        "gpu-13",
        labels=spare,
        allocatable={"cpu": "224", "memory": "1979Gi", "nvidia.com/gpu": "8", "pods": "110"},
    )
    wait_for(lambda: scrape(url).get(AT_RISK) == 0, what="train-b replaceable")
    assert scrape(url)[SAFE] == 2

    # train-b finishes: its Workload is gone from the view
    def finished(obj: dict[str, Any]) -> None:
        obj.setdefault("status", {})["admission"] = None

    fake_kube.update_object("Workload", "train-b", finished, namespace="team-b")
    wait_for(lambda: scrape(url).get(SAFE) == 1, what="train-b gone from the view")


def test_exporter_keeps_working_with_nodes_only_without_kueue(
    fake_kube: FakeKube, exporter: tuple[AuditExporter, str]
) -> None:
    exp, url = exporter
    fake_kube.faults.add(path="/apis/kueue.x-k8s.io/.*", status=404, times=None)
    load_example(fake_kube)
    nodes = series("topology_labeler_nodes", profile="oci-rdma", state="labeled")
    m = wait_for(lambda: (s := scrape(url)).get(nodes) == 11 and s, what="the node audit")
    wait_for(
        lambda: scrape(url).get("topology_labeler_hotswap_kueue_served") == 0,
        what="the hot-swap view to say Kueue is not served",
    )
    assert AT_RISK not in m
    assert exp.healthz()[0] and exp.readyz()[0]
