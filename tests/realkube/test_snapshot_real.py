"""The README's example cluster (``examples/snapshot-oci.yaml``) created in the real API
server with the released Kueue CRDs: what ``advise`` and ``audit`` say of the live cluster
equals what they say of the snapshot file, and the exporter follows Kueue Workloads and
ResourceSlices through real watches."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.draslices import gpu_slice
from tests.helpers import ROOT, cli_env, free_port, wait_for
from tests.kube.test_audit_fake import scrape, series
from tests.realkube import cluster
from tests.realkube.controlplane import ControlPlane

SNAPSHOT = ROOT / "examples" / "snapshot-oci.yaml"
AT_RISK = series("topology_labeler_hotswap_workloads", cluster_queue="gpu", state="not_replaceable")
UNLABELED = series("topology_labeler_nodes", profile="oci-rdma", state="unlabeled")
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
    env = cli_env()
    env.pop("KUBECONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "labeler", *args, "--kubeconfig", str(plane.kubeconfig)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


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
    port = free_port()
    env = cli_env()
    env.pop("KUBECONFIG", None)
    log = (tmp_path / "audit.log").open("w")
    serve = subprocess.Popen(
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
            "--hotswap-interval",
            "0.5",
            "--kubeconfig",
            str(example.kubeconfig),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    spare = "gpu-13"
    try:
        wait_for(lambda: _get(url, AT_RISK) == 1, timeout=30, what="train-b at risk")
        before = _get(url, UNLABELED) or 0
        # A free H100 node joins lb-3: one failure of train-b's nodes is now survivable.
        labels = {
            "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
            "oci.oraclecloud.com/rdma.hpc_island_id": "island-a",
            "oci.oraclecloud.com/rdma.network_block_id": "nb-2",
            "oci.oraclecloud.com/rdma.local_block_id": "lb-3",
        }
        cluster.add_node(
            example,
            spare,
            labels=labels,
            allocatable={"cpu": "224", "memory": "1979Gi", "nvidia.com/gpu": "8"},
        )
        wait_for(lambda: _get(url, AT_RISK) == 0, timeout=20, what="train-b replaceable")
        # A node whose GPUs only a DRA driver publishes enters the scope with its slice,
        # through the watch with the field selector the real server serves.
        cluster.add_node(example, "gb-dra")
        example.kubectl("create", "-f", "-", input=json.dumps(gpu_slice("gb-dra", 4)))
        wait_for(
            lambda: _get(url, UNLABELED) == before + 1, timeout=20, what="the DRA node counted"
        )
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        log.close()
        example.kubectl("delete", "resourceslices", "--all", check=False)
        cluster.delete_nodes(example, spare, "gb-dra")


def _get(url: str, key: str) -> float | None:
    try:
        return scrape(url).get(key)
    except OSError:
        return None
