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
    # nodes, pods, gpu.nvidia.com's ResourceSlices and Kueue's five kinds, one page each
    assert fake_kube.count("list") == 3 + 5
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


def admitted(name: str, nodes: list[str], gpus: int = 8) -> dict[str, object]:
    """An admitted TAS Workload holding one pod of ``gpus`` GPUs on each of ``nodes``, as
    Kueue records it (v1beta1's topologyAssignment encoding)."""
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {
        "nvidia.com/gpu": str(gpus)}}}]}}  # fmt: skip
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"podSets": [{"name": "main", "count": len(nodes), "template": template}]},
        "status": {
            "admission": {
                "clusterQueue": "gpu",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": len(nodes),
                        "flavors": {"nvidia.com/gpu": "h100"},
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "domains": [{"values": [n], "count": 1} for n in nodes],
                        },
                    }
                ],
            }
        },
    }


def held_lb2(fake_kube: FakeKube, kubeconfig: Path) -> list[str]:
    """Two local blocks of two 8-GPU nodes; lb2's are held by an admitted Workload whose
    pods have not started. The flags of a JSON advise of it."""
    gpu = {"nvidia.com/gpu": "8", "pods": "110"}
    for i in range(4):
        fake_kube.add_node(
            f"gpu-{i}",
            labels={ISLAND: "i", NB: "nb1", LB: "lb1" if i < 2 else "lb2",
                    "kubernetes.io/hostname": f"gpu-{i}"},
            allocatable=gpu,
        )  # fmt: skip
    fake_kube.add_object("Namespace", {"metadata": {"name": "ml"}})
    fake_kube.add_object("Workload", admitted("train", ["gpu-2", "gpu-3"]), namespace="ml")
    return ["--kubeconfig", str(kubeconfig), "--from-cluster", "--profile", "oci-rdma",
            "--request", "nvidia.com/gpu=8", "-o", "json"]  # fmt: skip


def test_the_quick_form_subtracts_what_admitted_workloads_hold(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kueue counts a TAS Workload's capacity through its topology assignment from the
    moment it is admitted, before its pods exist; the quick form must not offer it."""
    flags = held_lb2(fake_kube, kubeconfig)
    code = main(["advise", *flags, "--pods", "2", "--required", "local_block"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["admitted_workloads_holding_capacity"] == 1
    assert [a["node"] for a in doc["assignment"]] == ["gpu-0", "gpu-1"]
    code = main(["advise", *flags, "--pods", "3", "--required", "network_block"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["message"].startswith(
        'topology "oci-rdma" allows to fit only 2 out of 3 pod(s). Total nodes: 4; excluded: '
        'resource "nvidia.com/gpu": 2'
    )
    assert main(["domains", *flags]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {d["domain"]: d["free"] for d in doc["levels"][2]["domains"]} == {"lb1": 2, "lb2": 0}
    # where Kueue's objects may not be read the answer goes on without them, and says so
    fake_kube.faults.add(path="/apis/kueue.x-k8s.io/.*", status=403, times=None)
    assert main(["domains", *flags]) == 0
    out, err = capsys.readouterr()
    assert {d["domain"]: d["free"] for d in json.loads(out)["levels"][2]["domains"]} == {
        "lb1": 2,
        "lb2": 2,
    }
    assert "warning:" in err and "403" in err and "counts as free" in err


@pytest.mark.parametrize(
    ("status", "plural"), [(403, "clusterqueues"), (404, "topologies"), (403, "localqueues")]
)
def test_one_kueue_kind_unread_still_counts_what_workloads_hold(
    fake_kube: FakeKube,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
    status: int,
    plural: str,
) -> None:
    """A kind this Kueue does not serve (404), or that this user may not list (403), is
    left out alone: the admitted Workloads are still read, so lb2 is still held."""
    flags = held_lb2(fake_kube, kubeconfig)
    fake_kube.faults.add(path=f"/apis/kueue.x-k8s.io/.*/{plural}", status=status, times=None)
    assert main(["domains", *flags]) == 0
    out, err = capsys.readouterr()
    assert {d["domain"]: d["free"] for d in json.loads(out)["levels"][2]["domains"]} == {
        "lb1": 2,
        "lb2": 0,
    }
    assert ("counts as free" in err) is False
    assert (f"Kueue's {plural} are left out" in err) is (status == 403)


def test_the_quick_form_and_the_workload_path_see_the_same_capacity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On the example snapshot (admitted Workloads on gpu-10 to gpu-12), the flag form of
    the JobSet's workers gets the message the Workload path gives for them."""
    root = Path(__file__).resolve().parents[2]
    snap = str(root / "examples" / "snapshot-oci.yaml")
    assert main(["advise", "-f", str(root / "examples" / "jobset-leader-workers.yaml"),
                 "--from-snapshot", snap, "-o", "json"]) == 3  # fmt: skip
    workers = json.loads(capsys.readouterr().out)["workloads"][0]["podsets"][1]
    assert workers["name"] == "workers"
    code = main([
        "advise", "--profile", "oci-rdma", "--topology-name", "default", "--from-snapshot", snap,
        "--pods", "4", "--request", "cpu=32,memory=256Gi,nvidia.com/gpu=8",
        "--required", "local_block", "-o", "json",
    ])  # fmt: skip
    quick = json.loads(capsys.readouterr().out)
    assert code == 3 and quick["message"] == workers["message"]
