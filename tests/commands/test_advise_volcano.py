"""``advise`` for Volcano inputs, as a user types it: -f a Volcano Job or PodGroup, or
--podgroup, from a snapshot or (the fake API server) the cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from labeler.cli import main
from tests.builders import node, pod
from tests.fakekube import FakeKube
from tests.sim.volcano.objects import hypernode, podgroup, queue

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "snapshot-volcano.yaml"
JOB = ROOT / "examples" / "volcano-job.yaml"
OCI = ROOT / "examples" / "snapshot-oci.yaml"
NTA_CONF = """actions: enqueue, allocate
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: network-topology-aware
"""
EIGHT_CPUS = [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "8"}}}]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(["advise", *args, "-o", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def write(path: Path, doc: Any) -> str:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def job(tasks: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml"},
        "spec": {"queue": "training", "tasks": tasks, **spec},
    }


def task(name: str, replicas: int, *, gpus: int = 8, **extra: Any) -> dict[str, Any]:
    requests = {"cpu": "8", "nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "8"}
    # Volcano's webhook refuses an extended resource without a limit equal to its request.
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    container = {"name": "c", "image": "x", "resources": {"requests": requests, "limits": limits}}
    template = {"spec": {"containers": [container]}}
    return {"name": name, "replicas": replicas, "template": template, **extra}


def test_heterogeneous_job_in_hard_mode_names_the_coordinator_trap(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc = run(capsys, "-f", str(JOB), "--from-snapshot", str(SNAPSHOT))
    assert code == 3 and doc["fits"] is False and doc["pods"] == []
    assert doc["scheduler"] == "volcano" and doc["podGroup"] == "research/llm-train"
    assert doc["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    assert doc["message"].startswith("5/5 tasks in gang unschedulable: pod group is not ready")
    assert any(
        "task coordinator can run only on nodes outside every HyperNode" in t for t in doc["traps"]
    )
    assert doc["configuration"].endswith(
        "(ConfigMap volcano-system/volcano-scheduler-configmap, volcano-scheduler.conf)"
    )
    assert (doc["narrowestTierNow"], doc["narrowestTierEmpty"]) == (3, 3)


def test_workers_fit_the_spine_and_every_pod_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(JOB.read_text())
    doc["spec"]["tasks"] = doc["spec"]["tasks"][1:]
    doc["spec"]["minAvailable"] = 4
    doc["spec"]["networkTopology"]["highestTierName"] = "spine"
    code, out = run(capsys, "-f", write(tmp_path / "j.yaml", doc), "--from-snapshot", str(SNAPSHOT))
    assert code == 0 and out["fits"] is True
    assert (out["hyperNode"], out["tier"]) == ("spine", 2)
    assert [p["name"] for p in out["pods"]] == [f"research/llm-train-worker-{i}" for i in range(4)]
    nodes = {p["node"] for p in out["pods"]}
    assert "gpu-a3" not in nodes and "gpu-b1" not in nodes  # busy, tainted
    assert all(
        p["task"] == "worker" and p["hyperNode"] in ("rack-a", "rack-b") for p in out["pods"]
    )
    tiers = {t["tier"]: t for t in out["tiers"]}
    assert tiers[1]["now"]["copies"] == 0
    assert tiers[1]["empty"] == {"hyperNode": "rack-a", "copies": 1, "atLeast": False}
    assert tiers[2]["now"] == {"hyperNode": "spine", "copies": 1, "atLeast": False}


def test_text_output_says_why_in_volcano_words(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["advise", "-f", str(JOB), "--from-snapshot", str(SNAPSHOT)])
    text = capsys.readouterr().out
    assert code == 3
    assert "DOES NOT FIT: Volcano binds nothing this cycle" in text
    assert "highestTierAllowed 1 (written: hard mode, highestTierName rack)" in text
    assert "didn't match Pod's node affinity/selector" in text
    assert "copies of this gang the best HyperNode of each tier holds:" in text


def test_podgroup_and_pods_in_a_list_and_podgroup_from_the_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        podgroup(
            2, name="pg1", ns="serving", queue="default", mode="hard", tier=1, phase="Pending"
        ),
        pod("w-0")
        .namespace("serving")
        .uid()
        .volcano_group("pg1")
        .requests(cpu="8", memory="1Gi")
        .requests({"nvidia.com/gpu": "8"})
        .obj(),
        pod("w-1")
        .namespace("serving")
        .uid()
        .volcano_group("pg1")
        .requests(cpu="8", memory="1Gi")
        .requests({"nvidia.com/gpu": "8"})
        .obj(),
    ]
    f = write(tmp_path / "pg.yaml", {"apiVersion": "v1", "kind": "List", "items": items})
    code, doc = run(capsys, "-f", f, "--from-snapshot", str(SNAPSHOT))
    assert code == 0 and len(doc["pods"]) == 2 and doc["hyperNode"] in ("rack-a", "rack-b")
    # --podgroup reads the PodGroup already in the snapshot: it is running, nothing pending
    code, doc = run(capsys, "--podgroup", "serving/infer-7f3a", "--from-snapshot", str(SNAPSHOT))
    assert code == 0 and doc["fits"] is True and doc["pending"] == 0 and doc["pods"] == []


def test_queue_capability_below_min_resources_never_enqueues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = job([task("w", 3)], queue="small")  # 24 GPUs; queue small may use 16
    code, doc = run(capsys, "-f", write(tmp_path / "j.yaml", big), "--from-snapshot", str(SNAPSHOT))
    assert code == 3 and doc["pods"] == []
    assert doc["why"] == [
        "the PodGroup stays Pending, not enqueued: queue resource quota insufficient: "
        "insufficient nvidia.com/gpu"
    ]
    assert any(
        t.startswith("queue small is too small for the PodGroup's minResources")
        for t in doc["traps"]
    )


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"tasks": [task("w", 1), task("w", 1)]}, "duplicated task name w"),
        ({"tasks": [task("w", 2, minAvailable=3)]},
         "'minAvailable' is greater than 'replicas' in task: w, job: j"),
        ({"minAvailable": 5, "tasks": [task("w", 2)]},
         "job 'minAvailable' should not be greater than total replicas"),
        ({"tasks": [task("w", 4, partitionPolicy={"totalPartitions": 3, "partitionSize": 2})]},
         "'Replicas' are not equal to TotalPartitions*PartitionSize in task: w, job: j"),
        ({"networkTopology": {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"},
          "tasks": [task("w", 1)]}, "must not specify 'highestTierAllowed' and 'highestTierName'"),
    ],
)  # fmt: skip
def test_what_admission_refuses_is_one_error_naming_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: dict[str, Any], words: str
) -> None:
    doc = job(**spec) if "tasks" not in spec else job(spec.pop("tasks"), **spec)
    f = write(tmp_path / "j.yaml", doc)
    assert main(["advise", "-f", f, "--from-snapshot", str(SNAPSHOT)]) == 1
    err = capsys.readouterr().err
    assert "Job ml/j" in err and words in err and "admission webhook refuses this Job" in err


@pytest.mark.parametrize(
    ("hypernodes", "words"),
    [
        ([hypernode("a", 1, children=["b"]), hypernode("b", 2, children=["a"])],
         "cyclic dependency"),
        ([hypernode("a", 1, nodes=["n1"]), hypernode("b", 1, nodes=["n1"])],
         "node n1 is a member of two tier-1 HyperNodes, a and b"),
        ([hypernode("a", 1, nodes=["n1"]), hypernode("p", 2, children=["a"]),
          hypernode("q", 2, children=["a"])], "HyperNode a already has a parent p"),
    ],
)  # fmt: skip
def test_broken_hypernodes_are_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hypernodes: list[Any], words: str
) -> None:
    snap = write(
        tmp_path / "s.yaml",
        {
            "kind": "List",
            "items": [
                node("n1").allocatable(cpu="2", memory="4Gi", pods="10").capacity().obj(),
                queue("training"),
                *hypernodes,
            ],
        },
    )
    f = write(tmp_path / "j.yaml", job([task("w", 1, gpus=0)]))
    assert main(["advise", "-f", f, "--from-snapshot", snap]) == 1
    assert words in capsys.readouterr().err


def test_profile_hypernodes_stand_in_when_the_cluster_has_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # examples/snapshot-oci.yaml has no HyperNodes: with --profile, generate's ones are used
    lb = "oci.oraclecloud.com/rdma.local_block_id"
    doc = job(
        [task("w", 2)], queue="default", networkTopology={"mode": "hard", "highestTierName": lb}
    )
    f = write(tmp_path / "j.yaml", doc)
    conf = tmp_path / "sched.conf"
    conf.write_text(NTA_CONF)
    code, out = run(
        capsys,
        "-f",
        f,
        "--from-snapshot",
        str(OCI),
        "--profile",
        "oci-rdma",
        "--scheduler-conf",
        str(conf),
    )
    assert out["hyperNodeSource"].startswith("none in the cluster: the ")
    assert "'topology-labeler generate --profile oci-rdma' makes" in out["hyperNodeSource"]
    assert code == 0 and out["tier"] == 1 and out["hyperNode"].startswith("local-block-")
    code, out = run(capsys, "-f", f, "--from-snapshot", str(OCI), "--scheduler-conf", str(conf))
    assert out["hyperNodeSource"] is None
    assert any("the cluster has no HyperNodes" in n for n in out["notes"])


def test_flags_that_do_not_go_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path / "j.yaml", job([task("w", 1)]))
    assert main(["advise", "-f", f, "--podgroup", "a/b", "--from-snapshot", str(SNAPSHOT)]) == 2
    kueue = ROOT / "examples" / "jobset-leader-workers.yaml"
    args = ["advise", "-f", str(kueue), "--from-snapshot", str(OCI), "--scheduler-conf", f]
    assert main(args) == 2
    assert main(["advise", "--podgroup", "nope", "--from-snapshot", str(SNAPSHOT)]) == 2
    assert main(["advise", "--podgroup", "a/b", "--from-snapshot", str(SNAPSHOT)]) == 1
    assert "no Volcano PodGroup a/b" in capsys.readouterr().err


def test_help_says_which_scheduler_each_input_means(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["advise", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "batch.volcano.sh Job" in text and "scheduling.volcano.sh PodGroup" in text
    assert "A batch/v1 Job or a Workload is Kueue's" in text and "--scheduler-conf" in text


def test_from_cluster_reads_volcano_objects_and_the_scheduler_configmap(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("n1", "n2", "n3", "n4"):
        fake_kube.add_node(name, allocatable={"cpu": "8", "memory": "32Gi", "pods": "110"})
    fake_kube.add_object("HyperNode", hypernode("left", 1, nodes=["n1", "n2"]))
    fake_kube.add_object("HyperNode", hypernode("right", 1, nodes=["n3", "n4"]))
    fake_kube.add_object("queues.scheduling.volcano.sh", queue("q1"))
    fake_kube.add_object("Namespace", {"metadata": {"name": "c1"}})
    fake_kube.add_object(
        "podgroups.scheduling.volcano.sh", podgroup(2, mode="hard", tier=1, phase="Pending")
    )
    for i in range(2):
        fake_kube.add_pod(
            f"p{i}",
            namespace="c1",
            phase="Pending",
            annotations={"scheduling.k8s.io/group-name": "pg1"},
            containers=EIGHT_CPUS,
        )
    fake_kube.add_pod("busy", namespace="c1", node_name="n1", containers=EIGHT_CPUS)
    fake_kube.add_object("Namespace", {"metadata": {"name": "volcano-system"}})
    meta = {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"}
    fake_kube.add_object(
        "ConfigMap", {"metadata": meta, "data": {"volcano-scheduler.conf": NTA_CONF}}
    )
    fake_kube.clear_journal()
    code, doc = run(
        capsys, "--kubeconfig", str(kubeconfig), "--from-cluster", "--podgroup", "c1/pg1"
    )
    assert code == 0 and doc["hyperNode"] == "right"  # left has n1 busy
    assert sorted(p["node"] for p in doc["pods"]) == ["n3", "n4"]
    assert doc["configuration"].startswith("the cluster")
    assert fake_kube.count("patch") == 0 and fake_kube.count("create") == 0
    paths = {r.path for r in fake_kube.journal}
    assert {
        "/apis/topology.volcano.sh/v1alpha1/hypernodes",
        "/apis/scheduling.volcano.sh/v1beta1/queues",
        "/apis/scheduling.volcano.sh/v1beta1/podgroups",
        "/api/v1/namespaces/volcano-system/configmaps/volcano-scheduler-configmap",
    } <= paths


def test_the_volcano_page_shows_what_advise_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    command = "advise -f examples/volcano-job.yaml --from-snapshot examples/snapshot-volcano.yaml"
    readme = (ROOT / "docs" / "advise-volcano.md").read_text()
    block = readme.split(f"$ topology-labeler {command}\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)  # the paths as the page gives them
    assert main(command.split()) == 3
    assert capsys.readouterr().out == block
