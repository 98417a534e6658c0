"""A GPU cluster on the real API server, read by the commands an operator types: the
kubectl plugin through the real kubectl (``kubectl topology audit``, ``kubectl topology
advise --from-cluster``), and the exporter's counts while nodes come and go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.audit.test_audit_fake import scrape, series
from tests.helpers import cli_env, wait_for
from tests.realkube import cluster, processes
from tests.realkube.controlplane import ControlPlane

GPU = {"nvidia.com/gpu": "8"}
UNLABELED = series("topology_labeler_nodes", profile="oci-rdma", state="unlabeled")
LEVELS = (
    "oci.oraclecloud.com/rdma.hpc_island_id",
    "oci.oraclecloud.com/rdma.network_block_id",
    "oci.oraclecloud.com/rdma.local_block_id",
)


def placed(block: str) -> dict[str, str]:
    return dict(zip(LEVELS, ("island", "nb", block), strict=True))


@pytest.fixture(scope="module")
def gpus(real_kube: ControlPlane) -> Iterator[list[str]]:
    """Four labeled GPU nodes in two local blocks, and one GPU node nobody labeled."""
    made = {"rg-a1": "lb1", "rg-a2": "lb1", "rg-b1": "lb2", "rg-b2": "lb2", "rg-bare": ""}
    for name, block in made.items():
        cluster.add_node(real_kube, name, allocatable=GPU, labels=placed(block) if block else {})
    yield list(made)
    cluster.delete_nodes(real_kube, *made)


@pytest.fixture(scope="module")
def plugin_env(real_kube: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """PATH with the real kubectl and the installed plugin script, as a user's would be."""
    script = Path(sys.executable).parent / "kubectl-topology"
    assert script.is_file(), f"{script} is missing: pip install -e . installs it"
    bin_dir = tmp_path_factory.mktemp("plugin-bin")
    (bin_dir / "kubectl-topology").symlink_to(script)
    (bin_dir / "kubectl").symlink_to(real_kube.bin / "kubectl")
    return {
        **cli_env(),
        "PATH": os.pathsep.join([str(bin_dir), os.environ["PATH"]]),
        "KUBECONFIG": str(real_kube.kubeconfig),
    }


def kubectl_topology(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "topology", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_kubectl_topology_audit_names_the_unlabeled_node(
    gpus: list[str], plugin_env: dict[str, str]
) -> None:
    done = kubectl_topology(plugin_env, "audit", "--profile", "oci-rdma", "-o", "json")
    report = json.loads(done.stdout)
    text = json.dumps(report)
    assert "rg-bare" in text
    table = kubectl_topology(plugin_env, "audit", "--profile", "oci-rdma")
    assert "rg-bare" in table.stdout, table.stdout + table.stderr
    assert done.returncode == table.returncode != 0  # an unlabeled node is a finding


def test_kubectl_topology_advise_from_the_cluster(
    gpus: list[str], plugin_env: dict[str, str]
) -> None:
    job = (
        "advise",
        "--profile",
        "oci-rdma",
        "--from-cluster",
        "--pods",
        "2",
        "--request",
        "nvidia.com/gpu=8",
        "--required",
        "local_block",
    )
    fits = kubectl_topology(plugin_env, *job)
    assert fits.returncode == 0, fits.stdout + fits.stderr
    assert "Verdict: FITS now" in fits.stdout, fits.stdout
    too_big = kubectl_topology(plugin_env, *job[:5], "3", *job[6:])
    assert too_big.returncode != 0
    assert "does NOT fit" in too_big.stdout, too_big.stdout
    assert "rg-bare" in too_big.stdout  # outside the topology, said by name


def unlabeled(url: str) -> float | None:
    """The exporter's count of unlabeled nodes, or None while it does not answer."""
    try:
        return scrape(url).get(UNLABELED)
    except OSError:
        return None


def test_exporter_counts_follow_nodes_coming_and_going(
    real_kube: ControlPlane, gpus: list[str], tmp_path: Path
) -> None:
    try:
        with processes.exporter(tmp_path / "audit.log", real_kube.kubeconfig) as url:
            wait_for(lambda: unlabeled(url) == 1, timeout=30, what="one unlabeled node exported")
            cluster.add_node(real_kube, "rg-late", allocatable=GPU)
            wait_for(lambda: unlabeled(url) == 2, timeout=15, what="a new unlabeled node counted")
            late = (f"{k}={v}" for k, v in placed("lb2").items())
            real_kube.kubectl("label", "node", "rg-late", *late)
            wait_for(lambda: unlabeled(url) == 1, timeout=15, what="the labeled node left out")
            cluster.delete_nodes(real_kube, "rg-bare")
            wait_for(lambda: unlabeled(url) == 0, timeout=15, what="the deleted node gone")
    finally:
        cluster.delete_nodes(real_kube, "rg-late")
        if real_kube.kubectl("get", "node", "rg-bare", check=False).returncode != 0:
            cluster.add_node(real_kube, "rg-bare", allocatable=GPU)
