"""The README's example cluster (``examples/snapshot-oci.yaml``) created in the real API
server with the released Kueue CRDs: what ``advise`` and ``audit`` say of the live cluster
equals what they say of the snapshot file, and the exporter follows Kueue Workloads and
ResourceSlices through real watches."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.audit.test_audit_fake import scrape, series
from tests.draslices import gpu_slice
from tests.helpers import ROOT, wait_for
from tests.realkube import cluster, processes
from tests.realkube.controlplane import ControlPlane
from tests.realkube.test_plugin_audit_real import unlabeled

SNAPSHOT = ROOT / "examples" / "snapshot-oci.yaml"
AT_RISK = series("topology_labeler_hotswap_workloads", cluster_queue="gpu", state="not_replaceable")
ADVISE = (
    "advise",
    "--profile",
    "oci-rdma",
    "--pods",
    "4",
    "--request",
    "nvidia.com/gpu=8",
    "--required",
    "local_block",
)


@pytest.fixture(scope="module")
def example(crds: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    made = cluster.load_snapshot(crds, SNAPSHOT, tmp_path_factory.mktemp("snapshot"))
    yield crds
    cluster.delete_loaded(crds, made)


def labeler(plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return processes.cli(*args, kubeconfig=plane.kubeconfig)


def test_advise_of_the_live_cluster_equals_advise_of_its_snapshot(example: ControlPlane) -> None:
    live = labeler(example, *ADVISE, "--from-cluster")
    offline = labeler(example, *ADVISE, "--from-snapshot", str(SNAPSHOT))
    assert live.returncode == offline.returncode, live.stderr
    assert 'topology "oci-rdma" allows to fit only 2 out of 4 pod(s)' in live.stdout, live.stdout
    assert live.stdout == offline.stdout


def test_audit_of_the_live_cluster_names_the_workload_a_failure_would_evict(
    example: ControlPlane,
) -> None:
    done = labeler(example, "audit", "--profile", "oci-rdma")
    assert done.returncode == 3, done.stdout + done.stderr  # gpu-09 is partial
    assert "One node failure would evict 1 Workload(s):" in done.stdout
    assert "team-b/train-b (ClusterQueue gpu, flavor h100):" in done.stdout


def test_exporter_follows_workloads_and_slices_through_real_watches(
    example: ControlPlane, tmp_path: Path
) -> None:
    spare = "gpu-13"
    log = tmp_path / "audit.log"
    try:
        with processes.exporter(log, example.kubeconfig, "--hotswap-interval", "0.5") as url:
            wait_for(lambda: _get(url, AT_RISK) == 1, timeout=30, what="train-b at risk")
            before = unlabeled(url) or 0
            # A free H100 node joins lb-3: one failure of train-b's nodes is now survivable.
            labels = {
                "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
                "oci.oraclecloud.com/rdma.hpc_island_id": "island-a",
                "oci.oraclecloud.com/rdma.network_block_id": "nb-2",
                "oci.oraclecloud.com/rdma.local_block_id": "lb-3",
            }
            gpus = {"cpu": "224", "memory": "1979Gi", "nvidia.com/gpu": "8"}
            cluster.add_node(example, spare, labels=labels, allocatable=gpus)
            wait_for(lambda: _get(url, AT_RISK) == 0, timeout=20, what="train-b replaceable")
            # A node whose GPUs only a DRA driver publishes enters the scope with its slice,
            # through the watch with the field selector the real server serves.
            cluster.add_node(example, "gb-dra")
            example.kubectl("create", "-f", "-", input=json.dumps(gpu_slice("gb-dra", 4)))
            wait_for(lambda: unlabeled(url) == before + 1, timeout=20, what="the DRA node")
    finally:
        example.kubectl("delete", "resourceslices", "--all", check=False)
        cluster.delete_nodes(example, spare, "gb-dra")


def _get(url: str, key: str) -> float | None:
    try:
        return scrape(url).get(key)
    except OSError:
        return None
