"""generate --emit slurm through the command line: from a CSV and from the cluster."""

from __future__ import annotations

from pathlib import Path

import hostlist
import pytest
import yaml

from labeler.cli import main
from tests.commands.test_generate_cli import OCI_CSV, _gpu_cluster
from tests.fakekube import FakeKube


def test_from_csv_writes_both_files_next_to_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["generate", "--profile", "oci-rdma", "--from-csv", OCI_CSV, "--emit", "slurm"]
    assert main([*args, "--output-dir", str(out), "--slurm-topology-name", "ib"]) == 0
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == [
        "topology.conf",
        "topology.yaml",
    ]
    assert "SwitchName=" in (out / "slurm" / "topology.conf").read_text()
    doc = yaml.safe_load((out / "slurm" / "topology.yaml").read_text())
    assert doc[0]["topology"] == "ib"
    assert "(Slurm file)" in capsys.readouterr().out


def test_slurm_needs_an_output_dir_and_positions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["generate", "--profile", "oci-rdma", "--emit", "kueue,slurm"]
    assert main([*base, "--from-csv", OCI_CSV, "-o", "-"]) == 2
    assert "--output-dir" in capsys.readouterr().err
    assert main([*base, "--output-dir", str(tmp_path)]) == 2
    assert not any(tmp_path.iterdir())  # refused before anything was written
    assert main(["generate", "--profile", "oci-rdma", "--emit", "slurmx", "-o", "-"]) == 2
    assert "slurm" in capsys.readouterr().err


def test_from_cluster(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _gpu_cluster(fake_kube)
    args = ["generate", "--kubeconfig", str(kubeconfig), "--profile", "oci-rdma"]
    assert main([*args, "--from-cluster", "--emit", "slurm", "--output-dir", str(tmp_path)]) == 0
    conf = (tmp_path / "slurm" / "topology.conf").read_text()
    leaves = [ln for ln in conf.splitlines() if " Nodes=" in ln]
    nodes = sorted(n for ln in leaves for n in hostlist.expand_hostlist(ln.split("Nodes=")[1]))
    assert nodes == ["gpu-1", "gpu-2"]  # the CPU node is out of scope
    assert "SwitchName=local_block-l1 Nodes=gpu-1" in conf
