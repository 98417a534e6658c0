"""The two-source profile file of docs/profiles.md (examples/profile-oci-gb200.yaml) through
the agent as a process: OCI IMDS for the RDMA levels and the extra labels, nvidia-smi for
the clique, the encoding applied to the IDs only; then check and generate --emit slurm
from the labels it wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hostlist
import pytest
import yaml

from labeler.cli import main
from labeler.core.profiles import NVIDIA_CLIQUE, OCI_HOST_ID, OCI_PREFIX
from tests.e2e.fake_imds import RDMA, FakeImds, rdma_doc
from tests.fakekube import FakeKube
from tests.helpers import cli_env
from tests.sources.nvidia_fakes import UUID, FakeNvidiaSmi

pytestmark = pytest.mark.slow

PROFILE = str(Path(__file__).resolve().parents[2] / "examples" / "profile-oci-gb200.yaml")


def agent(kubeconfig: Path, imds: FakeImds, smi: FakeNvidiaSmi, node: str) -> None:
    env = cli_env()
    env.pop("KUBECONFIG", None)
    argv = [sys.executable, "-m", "labeler", "agent", "--once", "--profile", PROFILE]
    argv += ["--kubeconfig", str(kubeconfig), "--node-name", node]
    argv += ["--imds-url", imds.url_for(node), "--imds-attempts", "1"]
    argv += ["--nvidia-smi", str(smi.path)]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr


def test_the_example_profile_labels_from_both_sources(
    fake_kube: FakeKube, imds: FakeImds, kubeconfig: Path, tmp_path: Path
) -> None:
    smi = FakeNvidiaSmi(tmp_path / "bin")
    nodes = ("gb-01", "gb-02")
    for i, node in enumerate(nodes):
        fake_kube.add_node(node, allocatable={"nvidia.com/gpu": "4"})
        imds.set(node, RDMA, rdma_doc("i1", "n1", "l1", f"h{i}"))
        agent(kubeconfig, imds, smi, node)
    doc = rdma_doc("i1", "n1", "l1", "h0")
    labels = fake_kube.get_node("gb-01")["metadata"]["labels"]
    # suffix:11 on the OCIDs, the extra label included; the clique written as it is.
    assert labels[OCI_PREFIX + "rdma.hpc_island_id"] == doc["customerHPCIslandId"][-11:]
    assert labels[OCI_PREFIX + "rdma.local_block_id"] == doc["customerLocalBlock"][-11:]
    assert labels[OCI_HOST_ID] == doc["customerHostId"][-11:]
    assert labels[NVIDIA_CLIQUE] == UUID.lower() + ".32766"

    kc = ["--kubeconfig", str(kubeconfig), "--profile", PROFILE, "--from-cluster"]
    assert main(["check", *kc]) == 0
    out = tmp_path / "out"
    assert main(["generate", *kc, "--emit", "slurm", "--output-dir", str(out)]) == 0
    docs = yaml.safe_load((out / "slurm" / "topology.yaml").read_text())
    assert [d["topology"] for d in docs] == ["oci-gb200", "oci-gb200-block"]
    (block,) = docs[1]["block"]["blocks"]
    assert sorted(hostlist.expand_hostlist(block["nodes"])) == list(nodes)
