"""``advise`` with Kueue's feature gates, as a user types it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from labeler.cli import main
from tests.audit.test_hotswap_fake import load_example
from tests.commands.test_advise_workload import JOBSET, LB, NB, SNAPSHOT, run
from tests.fakekube import FakeKube

QUICK = (
    "--profile", "oci-rdma", "--from-snapshot", str(SNAPSHOT),
    "--pods", "12", "--request", "nvidia.com/gpu=1", "--preferred", "local_block",
)  # fmt: skip


def test_balanced_placement_gate_spreads_a_preferred_job_evenly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, best_fit = run(capsys, *QUICK)
    assert code == 0 and not best_fit["balanced_placement"]
    assert {a["node"]: a["count"] for a in best_fit["assignment"]} == {"gpu-03": 8, "gpu-04": 4}
    code, balanced = run(capsys, *QUICK, "--kueue-feature-gates", "TASBalancedPlacement=true")
    assert code == 0 and balanced["balanced_placement"]
    assert {a["node"]: a["count"] for a in balanced["assignment"]} == {"gpu-03": 6, "gpu-04": 6}


def test_an_unknown_gate_is_a_usage_error_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["advise", *QUICK, "--kueue-feature-gates", "TASNope=true"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized feature gate: TASNope" in err and "TASBalancedPlacement" in err


def test_help_names_the_modelled_kueue(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["advise", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Kueue is modelled as of Kueue v0.19.2" in out
    assert "TASBalancedPlacement (off" in out


def test_failed_node_needs_a_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", *QUICK, "--failed-node", "gpu-03"]) == 2
    assert "--failed-node needs an admitted Workload" in capsys.readouterr().err
    # Volcano's input is answered by Volcano's rules, where Kueue's failures do not apply.
    examples = Path(__file__).resolve().parents[2] / "examples"
    volcano = ["-f", str(examples / "volcano-job.yaml")]
    volcano += ["--from-snapshot", str(examples / "snapshot-volcano.yaml")]
    assert main(["advise", *volcano, "--failed-node", "gpu-a0"]) == 2
    assert "(the input is Volcano's)" in capsys.readouterr().err


# --- node failures of an admitted Workload ------------------------------------------------


def test_a_failed_node_in_a_full_local_block_evicts_train_b(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc = run(
        capsys, "--workload", "team-b/train-b", "--from-snapshot", str(SNAPSHOT),
        "--failed-node", "gpu-12",
    )  # fmt: skip
    assert code == 3 and not doc["fits"] and doc["outcome"] == "evicted"
    assert doc["message"] == (
        "Workload was evicted as there was no replacement for unhealthy node(s): gpu-12"
    )
    (failed,) = doc["podsets"][0]["failed"]
    assert (failed["node"], failed["pods"], failed["replacement"]) == ("gpu-12", 1, None)
    # gpu-10 is held by infer-7f3a, gpu-11 by train-b itself, gpu-09 lost its label
    assert failed["searched"] == {"level": LB, "values": ["island-a", "nb-2", "lb-3"]}
    assert failed["candidates"] == []


def test_an_unconstrained_workload_moves_to_any_free_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc = run(
        capsys, "--workload", "team-a/infer-7f3a", "--from-snapshot", str(SNAPSHOT),
        "--failed-node", "gpu-10",
    )  # fmt: skip
    assert code == 0 and doc["fits"] and doc["outcome"] == "replaced"
    (failed,) = doc["podsets"][0]["failed"]
    assert failed["replacement"] == [{"node": "gpu-03", "count": 1}]
    assert failed["searched"] is None
    assert doc["podsets"][0]["assignment"] == [{"hostname": "gpu-03", "count": 1}]


def test_two_nodes_at_once_evict_one_by_one_each_is_searched(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--workload", "team-b/train-b", "--from-snapshot", str(SNAPSHOT)]
    args += ["--failed-node", "gpu-11", "--failed-node", "gpu-12"]
    code, doc = run(capsys, *args)
    assert code == 3 and doc["message"] == (
        "Workload eviction triggered due to multiple TAS assigned node failures, including: "
        "gpu-11, gpu-12"
    )
    assert doc["podsets"][0]["failed"] == []  # the node controller evicts before any search
    code, doc = run(capsys, *args, "--failures", "one-by-one")
    assert code == 3 and doc["outcome"] == "evicted"
    assert [f["node"] for f in doc["podsets"][0]["failed"]] == ["gpu-11"]


def test_text_says_where_kueue_looked_and_what_it_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["advise", "--workload", "team-b/train-b", "--from-snapshot", str(SNAPSHOT),
         "--failed-node", "gpu-12", "--failed-node", "gpu-03"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 3
    assert "gpu-12: gone (--failed-node); holds pods of main; failed now" in out
    assert "gpu-03: gone (--failed-node); holds none of its pods" in out
    assert f"searched {LB}=lb-3 (island-a/nb-2/lb-3)" in out
    assert "Verdict: EVICTED" in out


def test_a_node_already_failed_in_the_snapshot_is_judged_without_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(SNAPSHOT.read_text())
    for item in doc["items"]:
        name = item["metadata"]["name"]
        if item["kind"] == "Node" and name == "gpu-11":
            item["status"] = {
                **item["status"],
                "conditions": [{"type": "Ready", "status": "False"}],
            }
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump(doc))
    code, out = run(capsys, "--workload", "team-b/train-b", "--from-snapshot", str(snap))
    assert code == 3 and out["failures"] == [
        {
            "node": "gpu-11",
            "cause": "NotReady",
            "recorded": False,
            "when": "now",
            "podsets": ["main"],
            "acted_on": True,
        }
    ]
    # the ordinary placement for a Workload whose nodes are all healthy
    code, out = run(capsys, "--workload", "team-a/infer-7f3a", "--from-snapshot", str(snap))
    assert "workloads" in out and "failures" not in out


def test_failed_node_mistakes_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["advise", "--from-snapshot", str(SNAPSHOT)]
    assert main([*base, "--workload", "team-b/train-b", "--failed-node", "gpu-99"]) == 1
    assert "--failed-node gpu-99: no such node" in capsys.readouterr().err
    assert main([*base, "-f", str(JOBSET), "--failed-node", "gpu-03"]) == 1
    assert "--failed-node needs one admitted Workload" in capsys.readouterr().err


def test_from_the_cluster_a_notready_node_with_the_pod_still_running_waits(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example(fake_kube)

    def not_ready(node: dict[str, Any]) -> None:
        node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]

    fake_kube.update_node("gpu-12", not_ready)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-b-1",
            "namespace": "team-b",
            "annotations": {"kueue.x-k8s.io/workload": "train-b"},
        },
        "spec": {"nodeName": "gpu-12", "containers": [{"name": "trainer", "image": "x"}]},
        "status": {"phase": "Running"},
    }
    fake_kube.add_object("Pod", pod, namespace="team-b")
    code, doc = run(
        capsys, "--kubeconfig", str(kubeconfig), "--from-cluster", "--workload", "team-b/train-b"
    )
    assert code == 3 and doc["outcome"] == "evicted"
    (failure,) = doc["failures"]
    assert failure["node"] == "gpu-12" and failure["cause"] == "NotReady"
    assert failure["when"] == "once this Workload's 1 running pod(s) there end"


# --- which flavor: LocalQueue → ClusterQueue → flavor order -------------------------------


def test_two_tas_flavors_the_workloads_queue_says_which(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(capsys, "-f", str(JOBSET), "--from-snapshot", str(SNAPSHOT))
    assert code == 3 and doc["flavor"] == "h100"
    assert (doc["local_queue"], doc["cluster_queue"]) == ("team-c/gpu", "gpu")


def test_without_the_queues_two_flavors_need_flavor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(SNAPSHOT.read_text())
    doc["items"] = [i for i in doc["items"] if i["kind"] not in ("LocalQueue", "ClusterQueue")]
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump(doc))
    assert main(["advise", "-f", str(JOBSET), "--from-snapshot", str(snap)]) == 1
    assert "2 ResourceFlavor(s) with a topologyName (a100, h100); name one with --flavor" in (
        capsys.readouterr().err
    )
    code, out = run(capsys, "-f", str(JOBSET), "--from-snapshot", str(snap), "--flavor", "h100")
    assert code == 3 and out["flavor"] == "h100"


def test_flavors_are_tried_in_the_cluster_queues_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(SNAPSHOT.read_text())
    for item in doc["items"]:
        if item["kind"] == "ClusterQueue" and item["metadata"]["name"] == "gpu":
            group = item["spec"]["resourceGroups"][0]
            group["flavors"] = [{**group["flavors"][0], "name": "a100"}, group["flavors"][0]]
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump(doc))
    relaxed = tmp_path / "js.yaml"
    relaxed.write_text(JOBSET.read_text().replace(f"topology: {LB}", f"topology: {NB}"))
    code, out = run(capsys, "-f", str(relaxed), "--from-snapshot", str(snap))
    assert code == 0 and out["flavor"] == "h100"
    a100, h100 = out["flavors_tried"]
    assert (a100["flavor"], a100["fits"], h100["flavor"], h100["fits"]) == (
        "a100",
        False,
        "h100",
        True,
    )
    assert a100["message"] == f"no topology domains at level: {NB}"  # a100 has no nodes yet
