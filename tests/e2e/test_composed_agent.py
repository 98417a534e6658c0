"""``agent --once --profile oci-rdma-nvlink``: OCI IMDS and nvidia-smi read in one cycle,
every level written; ``generate --emit slurm`` from those labels makes the clique the
Slurm block level."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import hostlist
import pytest
import yaml

from labeler.cli import main
from labeler.core.profiles import NVIDIA_CLIQUE, OCI_HOST_ID, oci_rdma_nvlink
from tests.e2e.fake_imds import RDMA, Answer, FakeImds, rdma_doc
from tests.fakekube import FakeKube
from tests.helpers import cli_env
from tests.sources.nvidia_fakes import NO_FABRIC, TRAY, UUID, FakeNvidiaSmi

pytestmark = pytest.mark.slow


def agent(
    kubeconfig: Path, imds: FakeImds, smi: FakeNvidiaSmi, node: str
) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env.pop("KUBECONFIG", None)
    argv = [sys.executable, "-m", "labeler", "agent", "--once", "--profile", "oci-rdma-nvlink"]
    argv += ["--kubeconfig", str(kubeconfig), "--node-name", node]
    argv += [
        "--imds-url",
        imds.url_for(node),
        "--imds-attempts",
        "1",
        "--nvidia-smi",
        str(smi.path),
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def h(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def test_every_level_from_both_sources_then_slurm_blocks_from_the_clique(
    fake_kube: FakeKube, imds: FakeImds, kubeconfig: Path, tmp_path: Path
) -> None:
    profile = oci_rdma_nvlink()
    smi = FakeNvidiaSmi(tmp_path / "bin")
    for i, node in enumerate(("gb-1", "gb-2")):
        fake_kube.add_node(node, allocatable={"nvidia.com/gpu": "4"})
        imds.set(node, RDMA, rdma_doc("i1", "n1", "l1", f"h{i}"))
    done = [agent(kubeconfig, imds, smi, node) for node in ("gb-1", "gb-2")]
    assert all(p.returncode == 0 for p in done), [p.stderr for p in done]
    labels = fake_kube.get_node("gb-1")["metadata"]["labels"]
    for key in profile.level_keys:
        assert key in labels, key
    # The clique raw, as GFD writes it; the OCI IDs hashed as oci-rdma writes them.
    assert labels[NVIDIA_CLIQUE] == UUID.lower() + ".32766"
    assert labels[OCI_HOST_ID] == h(rdma_doc("i1", "n1", "l1", "h0")["customerHostId"])

    out = tmp_path / "out"
    args = ["generate", "--kubeconfig", str(kubeconfig), "--profile", "oci-rdma-nvlink"]
    assert main([*args, "--from-cluster", "--emit", "slurm", "--output-dir", str(out)]) == 0
    docs = yaml.safe_load((out / "slurm" / "topology.yaml").read_text())
    (block,) = [d["block"] for d in docs if "block" in d]
    # One NVLink clique holds both nodes: one block of two.
    (one,) = block["blocks"]
    assert sorted(hostlist.expand_hostlist(one["nodes"])) == ["gb-1", "gb-2"]


def test_an_error_in_one_source_keeps_every_label_and_no_data_leaves_its_level_unknown(
    fake_kube: FakeKube, imds: FakeImds, kubeconfig: Path, tmp_path: Path
) -> None:
    smi = FakeNvidiaSmi(tmp_path / "bin")
    fake_kube.add_node("gb-1")
    imds.set("gb-1", RDMA, rdma_doc("i1", "n1", "l1", "h0"))
    assert agent(kubeconfig, imds, smi, "gb-1").returncode == 0
    before = dict(fake_kube.get_node("gb-1")["metadata"]["labels"])
    smi.set(stdout="", code=9, stderr="NVIDIA-SMI has failed")
    failed = agent(kubeconfig, imds, smi, "gb-1")
    assert failed.returncode == 1 and "NVIDIA-SMI has failed" in failed.stderr
    imds.set("gb-1", RDMA, Answer(503, "busy"))
    smi.set(TRAY)
    assert agent(kubeconfig, imds, smi, "gb-1").returncode == 1
    # No fabric: the clique and the narrower host are unknown, so kept; exit 1 (a level is
    # unknown), nothing removed.
    imds.set("gb-1", RDMA, rdma_doc("i1", "n1", "l1", "h0"))
    smi.set([NO_FABRIC])
    unknown = agent(kubeconfig, imds, smi, "gb-1")
    assert unknown.returncode != 0 and "nvidia-smi has no data" in unknown.stderr + unknown.stdout
    assert fake_kube.get_node("gb-1")["metadata"]["labels"] == before
