"""``advise``/``domains --from-cluster`` against the fake API server, with the real client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeler.cli import main
from labeler.core.profiles import oci_rdma
from tests.fakekube import FakeKube

ISLAND, NB, LB = oci_rdma().topology.keys


def gpu_pod(fake: FakeKube, name: str, node: str, gpus: int, phase: str = "Running") -> None:
    fake.add_pod(
        name,
        namespace="kube-system",
        node_name=node,
        phase=phase,
        containers=[
            {"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}
        ],
    )


def test_from_cluster_reads_nodes_pods_and_taints(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gpu = {"nvidia.com/gpu": "8", "pods": "110", "cpu": "224"}
    for i in range(6):
        lb = "lb1" if i < 4 else "lb2"
        fake_kube.add_node(
            f"gpu-{i}",
            labels={ISLAND: "i", NB: "nb1", LB: lb},
            allocatable=gpu,
            taints=[{"key": "maint", "effect": "NoExecute"}] if i == 3 else None,
        )
    fake_kube.add_node("gpu-x", labels={ISLAND: "i", NB: "nb1"}, allocatable=gpu)
    fake_kube.add_node("gpu-down", labels={ISLAND: "i", NB: "nb1", LB: "lb2"}, ready=False)
    gpu_pod(fake_kube, "busy", "gpu-0", 8)
    gpu_pod(fake_kube, "finished", "gpu-1", 8, phase="Succeeded")
    fake_kube.clear_journal()

    code = main(
        [
            "advise", "--kubeconfig", str(kubeconfig), "--from-cluster", "--profile", "oci-rdma",
            "--pods", "3", "--request", "nvidia.com/gpu=8", "--required", "local_block",
            "-o", "json",
        ]
    )  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 3
    assert doc["message"] == (
        'topology "oci-rdma" allows to fit only 2 out of 3 pod(s). Total nodes: 6; excluded: '
        'resource "nvidia.com/gpu": 1, taint "maint:NoExecute": 1'
    )
    assert {o["node"]: o["reason"] for o in doc["outside"]} == {
        "gpu-x": f"missing level label {LB}",
        "gpu-down": "not Ready",
    }
    assert doc["narrowest_fit_now"] == NB
    # nodes, pods and gpu.nvidia.com's ResourceSlices, one page each
    assert fake_kube.count("list") == 3
    assert fake_kube.count("patch") == 0 and fake_kube.count("create") == 0

    code = main(
        [
            "domains", "--kubeconfig", str(kubeconfig), "--from-cluster", "--profile", "oci-rdma",
            "--request", "nvidia.com/gpu=8", "-o", "json",
        ]
    )  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    lbs = {d["domain"]: (d["total"], d["free"]) for d in doc["levels"][2]["domains"]}
    assert lbs == {"lb1": (3, 2), "lb2": (2, 2)}
