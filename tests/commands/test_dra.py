"""Nodes whose GPUs only DRA publishes, through the commands a user types: in the default
scope of audit, check, map and advise, with their devices counted; unchanged where the
cluster does not serve resource.k8s.io/v1; advise says what it does not model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labeler.cli import main
from labeler.core.profiles import oci_rdma
from tests.cli.test_doc_examples import FENCE, commands, matches
from tests.draslices import NVIDIA, gpu_slice
from tests.fakekube import FakeKube

ISLAND, NB, LB = oci_rdma().topology.keys
ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = str(ROOT / "examples" / "snapshot-dra.yaml")
LABELS = {ISLAND: "i", NB: "n", LB: "l"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cluster(fake_kube: FakeKube, kubeconfig: Path) -> list[str]:
    """gpu-1: the device plugin's 8 GPUs; gb-1 (labelled) and gb-2 (not): 4 GPUs each that
    only NVIDIA's DRA driver publishes, gb-1 with MIG partitions too; cpu-1: no GPU."""
    fake_kube.add_node("gpu-1", labels=LABELS, allocatable={"nvidia.com/gpu": "8"})
    fake_kube.add_node("gb-1", labels=LABELS)
    fake_kube.add_node("gb-2")
    fake_kube.add_node("cpu-1")
    fake_kube.add_object("ResourceSlice", gpu_slice("gb-1", 4, mig=2))
    fake_kube.add_object("ResourceSlice", gpu_slice("gb-2", 4))
    return ["--kubeconfig", str(kubeconfig)]


def test_audit_counts_dra_nodes_and_their_devices(
    cluster: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "audit", "--profile", "oci-rdma", "-o", "json", *cluster)
    doc = json.loads(out)
    assert code == 3 and doc["nodesInScope"] == 3
    assert doc["nodes"]["labeled"] == ["gb-1", "gpu-1"] and doc["nodes"]["unlabeled"] == ["gb-2"]
    assert doc["accelerators"] == {NVIDIA: 8, "nvidia.com/gpu": 8}
    assert doc["unlabeledAccelerators"] == {NVIDIA: 4}
    assert "gpu.nvidia.com devices (DRA)" in doc["scope"]
    # --dra-driver none: as before DRA, the two nodes are not looked at.
    code, out, _ = run(
        capsys, "audit", "--profile", "oci-rdma", "-o", "json", "--dra-driver", "none", *cluster
    )
    assert code == 0 and json.loads(out)["nodesInScope"] == 1


def test_a_cluster_without_the_resource_api_works_as_before(
    fake_kube: FakeKube, cluster: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kube.unserved.add("resource.k8s.io/v1")
    code, out, err = run(capsys, "audit", "--profile", "oci-rdma", "-o", "json", *cluster)
    assert code == 0 and json.loads(out)["nodesInScope"] == 1, err
    code, out, _ = run(capsys, "check", "--profile", "oci-rdma", "--from-cluster", *cluster)
    assert code == 0 and "1 node(s)" in out


def test_check_and_map_from_the_cluster(
    cluster: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "check", "--profile", "oci-rdma", "--from-cluster", *cluster)
    assert code == 3  # gb-2 has no labels
    assert "3 node(s)" in out and "1 other node(s) not checked" in out
    page = tmp_path / "m.html"
    argv = ["map", "--profile", "oci-rdma", "--from-cluster", "-o", str(page), *cluster]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "map of 3 node(s)" in out
    nodes = {n[0]: n for n in _data(page)["nodes"]}
    # gb-1: 4 GPUs (its MIG devices are the same GPUs), free not known: claims are not read.
    assert (nodes["gb-1"][3], nodes["gb-1"][4]) == (4, -1)
    assert (nodes["gpu-1"][3], nodes["gpu-1"][4]) == (8, 8)


def test_no_rbac_for_resourceslices_says_what_to_do(
    fake_kube: FakeKube, cluster: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kube.faults.add(path="/apis/resource.k8s.io/v1/resourceslices", status=403, times=None)
    code, _, err = run(capsys, "audit", "--profile", "oci-rdma", *cluster)
    assert code == 1
    assert "list resourceslices.resource.k8s.io: 403 Forbidden" in err
    assert "or pass --dra-driver none" in err
    code, _, _ = run(capsys, "audit", "--profile", "oci-rdma", "--dra-driver", "none", *cluster)
    assert code == 0


def test_advise_names_the_dra_nodes_and_what_it_does_not_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["advise", "--profile", "oci-rdma", "--from-snapshot", SNAPSHOT, "--pods", "3"]
    argv += ["--request", "nvidia.com/gpu=4", "--required", "local_block"]
    code, out, _ = run(capsys, *argv)
    assert code == 3
    text = " ".join(out.split())
    assert "DRA: 3 node(s) publish 12 gpu.nvidia.com device(s) in ResourceSlices" in text
    assert "3 of them have no allocatable nvidia.com/gpu (gb-03, gb-04, gb-05)" in text
    assert "Not modelled: DRA claims" in text
    code, out, _ = run(capsys, *argv, "-o", "json")
    dra = json.loads(out)["dra"]
    assert dra["devices"]["gb-03"] == {NVIDIA: 4}
    assert dra["withoutAllocatable"] == ["gb-03", "gb-04", "gb-05"]
    # Nothing to say without DRA devices: the output is as before.
    code, out, _ = run(capsys, *argv, "--dra-driver", "none")
    assert "DRA" not in out


def test_advise_a_workload_and_from_the_cluster(
    cluster: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    jobset = str(ROOT / "examples" / "jobset-leader-workers.yaml")
    argv = ["advise", "-f", jobset, "--profile", "oci-rdma", "--from-snapshot", SNAPSHOT]
    code, out, _ = run(capsys, *argv)
    assert "DRA: 3 node(s) publish 12 gpu.nvidia.com device(s)" in out
    code, out, _ = run(capsys, *argv, "-o", "json")
    assert json.loads(out)["dra"]["withoutAllocatable"] == ["gb-03", "gb-04", "gb-05"]
    argv = ["advise", "--profile", "oci-rdma", "--from-cluster", "--pods", "1"]
    code, out, _ = run(capsys, *argv, "--request", "nvidia.com/gpu=8", *cluster)
    assert code == 0 and "DRA: 2 node(s) publish 8 gpu.nvidia.com device(s)" in out


def test_the_map_from_a_snapshot_with_resourceslices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "m.html"
    argv = ["map", "--profile", "oci-rdma", "--from-snapshot", SNAPSHOT, "-o", str(page)]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "map of 5 node(s) (4 labeled, 0 partial, 1 unlabeled" in out
    data = _data(page)
    assert data["resources"] == [NVIDIA, "nvidia.com/gpu"]
    assert {n[0] for n in data["nodes"]} == {"gb-01", "gb-02", "gb-03", "gb-04", "gb-05"}


def test_a_broken_slice_in_a_snapshot_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "snap.yaml"
    bad.write_text(Path(SNAPSHOT).read_text().replace("driver: gpu.nvidia.com", "drivr: x", 1))
    argv = ["map", "--profile", "oci-rdma", "--from-snapshot", str(bad), "-o", str(tmp_path / "m")]
    code, _, err = run(capsys, *argv)
    assert code == 1
    assert re.search(r"items\[\d+\]: ResourceSlice gb-03-\S+: spec.driver and spec.pool", err)


def test_the_kueue_page_dra_example(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/advise-kueue.md's advise example on examples/snapshot-dra.yaml prints what it
    shows."""
    (block,) = [b for lang, b in FENCE.findall((ROOT / "docs" / "advise-kueue.md").read_text())
                if lang == "console" and "snapshot-dra.yaml" in b]  # fmt: skip
    monkeypatch.chdir(ROOT)
    ((argv, expected),) = commands(block)
    code, out, _ = run(capsys, *argv[1:])
    assert code == 3 and matches(out.splitlines(), expected), out


def _data(page: Path) -> dict:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text())
    assert m is not None
    doc: dict = json.loads(m.group(1))
    return doc
