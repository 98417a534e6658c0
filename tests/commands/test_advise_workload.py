"""``advise -f FILE`` and ``advise --workload NS/NAME``: a whole Workload, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from labeler.cli import main
from tests.fakekube import FakeKube

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "snapshot-oci.yaml"
JOBSET = ROOT / "examples" / "jobset-leader-workers.yaml"
LB = "oci.oraclecloud.com/rdma.local_block_id"
NB = "oci.oraclecloud.com/rdma.network_block_id"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(["advise", *args, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_example_jobset_is_pending_and_says_where_it_would_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc = run(capsys, "-f", str(JOBSET), "--from-snapshot", str(SNAPSHOT))
    assert code == 3  # done: the Workload does not fit
    assert doc["flavor"] == "h100" and doc["topology"] == "default"
    # infer-7f3a on gpu-10, train-b on gpu-11 and gpu-12
    assert doc["admitted_workloads_holding_capacity"] == 2
    (wl,) = doc["workloads"]
    assert wl["message"] == (
        'topology "default" allows to fit only 2 out of 4 pod(s). Total nodes: 11; excluded: '
        'resource "nvidia.com/gpu": 6, taint "nvidia.com/gpu-health=degraded:NoSchedule": 1'
    )
    leader, workers = wl["podsets"]
    assert (leader["name"], leader["role"], workers["role"]) == ("leader", "leader", "workers")
    assert workers["narrowest_fit_now"] == NB and workers["narrowest_fit_empty"] == LB


def test_relaxed_to_network_block_it_fits_with_the_leader_beside_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = JOBSET.read_text().replace(
        f"podset-required-topology: {LB}", f"podset-required-topology: {NB}"
    )
    path = tmp_path / "js.yaml"
    path.write_text(text)
    code, doc = run(capsys, "-f", str(path), "--from-snapshot", str(SNAPSHOT))
    assert code == 0 and doc["fits"]
    leader, workers = doc["workloads"][0]["podsets"]
    hosts = {a["hostname"]: a["count"] for a in workers["assignment"]}
    assert hosts == {"gpu-03": 1, "gpu-04": 1, "gpu-06": 1, "gpu-08": 1}
    assert [a["node"] for a in leader["assignment"]] == ["gpu-03"]
    assert {a["domains"][NB] for a in leader["assignment"] + workers["assignment"]} == {"nb-1"}


def test_text_output_and_profile_instead_of_kueue_objects(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["advise", "-f", str(JOBSET), "--from-snapshot", str(SNAPSHOT), "--profile", "oci-rdma"]
    )
    out = capsys.readouterr().out
    assert code == 3  # done: the Workload does not fit
    # the profile's topology, named after it; gpu-10 is still held by the admitted Workload
    assert 'topology "oci-rdma" allows to fit only 2 out of 4 pod(s)' in out
    assert "PodSet workers: 4 pod(s)" in out and "Modelled: Kueue v0.19.2;" in out


def test_workload_from_snapshot_and_bad_references(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the admitted Workload itself: its own admission does not count against it (train-b's does)
    code, doc = run(capsys, "--workload", "team-a/infer-7f3a", "--from-snapshot", str(SNAPSHOT))
    assert code == 0 and doc["admitted_workloads_holding_capacity"] == 1
    assert main(["advise", "--workload", "nope", "--from-snapshot", str(SNAPSHOT)]) == 2
    assert main(["advise", "--workload", "a/b", "--from-snapshot", str(SNAPSHOT)]) == 1
    assert "no Workload a/b" in capsys.readouterr().err
    assert main(["advise", "--from-snapshot", str(SNAPSHOT)]) == 2
    assert "give --pods, --request, --profile" in capsys.readouterr().err


def _seed(fake: FakeKube) -> None:
    """The example snapshot's cluster, and the pending JobSet's Workload in team-c."""
    snap = yaml.safe_load(SNAPSHOT.read_text())
    for ns in ("team-a", "team-b", "team-c"):
        fake.add_object("Namespace", {"metadata": {"name": ns}})
    for item in snap["items"]:
        meta = item["metadata"]
        if item["kind"] == "Node":
            fake.add_object("Node", item)
        elif item["kind"] == "Pod":
            fake.add_object("Pod", item, namespace=meta["namespace"])
        elif item["kind"] == "Workload":
            fake.add_object("Workload", item, namespace=meta["namespace"])
        else:
            fake.add_object(item["kind"], item)
    pending = yaml.safe_load(JOBSET.read_text())
    podsets = []
    for rj in pending["spec"]["replicatedJobs"]:
        tpl = rj["template"]["spec"]["template"]
        req = tpl["metadata"]["annotations"]
        podsets.append(
            {
                "name": rj["name"],
                "count": rj["template"]["spec"]["parallelism"],
                "template": {"spec": tpl["spec"]},
                "topologyRequest": {
                    "required": req["kueue.x-k8s.io/podset-required-topology"],
                    "podSetGroupName": req["kueue.x-k8s.io/podset-group-name"],
                },
            }
        )
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "jobset-llm-train-1a2b", "namespace": "team-c"},
        "spec": {"queueName": "gpu", "podSets": podsets},
    }
    fake.add_object("Workload", wl, namespace="team-c")


def test_workload_from_the_cluster(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(fake_kube)
    code, doc = run(
        capsys,
        "--kubeconfig", str(kubeconfig), "--from-cluster",
        "--workload", "team-c/jobset-llm-train-1a2b",
    )  # fmt: skip
    assert code == 3  # done: the Workload does not fit
    assert doc["admitted_workloads_holding_capacity"] == 2
    assert doc["workloads"][0]["message"].startswith(
        'topology "default" allows to fit only 2 out of 4 pod(s). Total nodes: 11'
    )


def test_workload_placed_on_the_profile_when_kueue_serves_no_topology_we_read(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Kueue whose Topology API is served at neither version the tool reads: the other
    kinds are still listed, and the Workload is placed on the profile's levels."""
    _seed(fake_kube)
    topologies = r"/apis/kueue\.x-k8s\.io/v1beta[12]/topologies"
    fake_kube.faults.add(method="GET", path=topologies, status=404, times=None)
    code, doc = run(
        capsys,
        "--kubeconfig", str(kubeconfig), "--from-cluster", "--profile", "oci-rdma",
        "--workload", "team-c/jobset-llm-train-1a2b",
    )  # fmt: skip
    assert code == 3  # done: the Workload does not fit
    # The Workloads are still listed: what the two admitted ones hold is not offered, so
    # the answer is the one with Kueue's Topology served (2 of 4, not an optimistic 3).
    assert doc["admitted_workloads_holding_capacity"] == 2
    (workload,) = doc["workloads"]
    assert workload["message"].startswith(
        'topology "oci-rdma" allows to fit only 2 out of 4 pod(s). Total nodes: 11'
    )
    assert [p["name"] for p in workload["podsets"]] == ["leader", "workers"]
    # a Workload not listed (gone, or made after the LIST) is asked for by name
    assert main(["advise", "--kubeconfig", str(kubeconfig), "--from-cluster",
                 "--profile", "oci-rdma", "--workload", "team-c/nope"]) == 1  # fmt: skip
    assert "not found" in capsys.readouterr().err.lower()
