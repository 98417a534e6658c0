"""``topology-labeler advise`` and ``domains`` end to end, on snapshot files written here.

Most cases call ``labeler.cli.main`` in-process (fast); a few run the real console entry
(``python -m labeler``) as a user would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from labeler.cli import main
from labeler.core.profiles import ASCEND_GROUP, ASCEND_SUPERPOD, ASCEND_TREE_LABEL, oci_rdma
from tests.builders import node, pod
from tests.helpers import cli_env
from tests.sim.kueue.objects import gpu_nodes, write_snapshot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "snapshot-oci.yaml"
ISLAND, NB, LB = oci_rdma().topology.keys
HOST = "kubernetes.io/hostname"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    return subprocess.run(
        [sys.executable, "-m", "labeler", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main([*args, "-o", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.fixture
def oci3(tmp_path: Path) -> Path:
    """3-level OCI tree with busy nodes.

    i ⊃ nb1 ⊃ lb1 {a1 busy, a2, a3, a4, a5 half busy}, lb2 {b1, b2 busy};
    i ⊃ nb2 ⊃ lb3 {c1, c2, c3}. Free 8-GPU slots: lb1 3, lb2 1, lb3 3; nb1 4, nb2 3.
    """
    spec = [
        (("i", "nb1", "lb1"), "a1", 8, 8),
        (("i", "nb1", "lb1"), "a2", 8, 0),
        (("i", "nb1", "lb1"), "a3", 8, 0),
        (("i", "nb1", "lb1"), "a4", 8, 0),
        (("i", "nb1", "lb1"), "a5", 8, 4),
        (("i", "nb1", "lb2"), "b1", 8, 0),
        (("i", "nb1", "lb2"), "b2", 8, 8),
        (("i", "nb2", "lb3"), "c1", 8, 0),
        (("i", "nb2", "lb3"), "c2", 8, 0),
        (("i", "nb2", "lb3"), "c3", 8, 0),
    ]
    return write_snapshot(tmp_path / "oci.yaml", gpu_nodes([ISLAND, NB, LB], spec))


BASE = ["--profile", "oci-rdma", "--request", "nvidia.com/gpu=8"]


def test_why_is_my_job_pending_on_the_example(tmp_path: Path) -> None:
    r = cli("advise", *BASE, "--from-snapshot", str(EXAMPLE), "--pods", "4", "--required", LB)
    assert r.returncode == 3, r.stderr
    # gpu-10 to gpu-12 are held by admitted Workloads whose pods have not started
    assert r.stdout.startswith("Capacity held by 2 admitted Workload(s) is subtracted.\n")
    assert (
        'topology "oci-rdma" allows to fit only 2 out of 4 pod(s). Total nodes: 11; excluded: '
        'resource "nvidia.com/gpu": 6, taint "nvidia.com/gpu-health=degraded:NoSchedule": 1'
    ) in r.stdout
    assert f"gpu-09: missing level label {LB}" in r.stdout
    assert "Narrowest level that fits now:          network_block" in r.stdout
    assert "Narrowest level on an empty cluster:    local_block" in r.stdout
    assert f"kueue.x-k8s.io/podset-required-topology: {NB}" in r.stdout
    assert f"highestTierName: {NB}" in r.stdout


def test_json_contract_when_it_fits(tmp_path: Path) -> None:
    r = cli(
        "advise", *BASE, "--from-snapshot", str(EXAMPLE), "--pods", "2",
        "--required", "local_block", "-o", "json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["fits"] is True and doc["message"] == ""
    assert doc["level"] == LB
    assert doc["narrowest_fit_now"] == LB and doc["narrowest_fit_empty"] == LB
    # lb-1 and lb-2 have two free nodes each (lb-3's are held by admitted Workloads): the
    # tie goes to the smaller level values
    assert doc["assignment"] == [
        {
            "node": n,
            "count": 1,
            "domains": {ISLAND: "island-a", NB: "nb-1", LB: "lb-1", HOST: n},
        }
        for n in ("gpu-03", "gpu-04")
    ]
    assert doc["admitted_workloads_holding_capacity"] == 2


def test_required_preferred_unconstrained_on_three_levels(
    oci3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = ["--from-snapshot", str(oci3)]
    code, doc = run_json(capsys, "advise", *BASE, *snap, "--pods", "3", "--required", LB)
    assert code == 0
    # lb1 and lb3 both have exactly 3: the tie goes to the smaller level values (lb1)
    assert [a["node"] for a in doc["assignment"]] == ["a2", "a3", "a4"]

    code, doc = run_json(capsys, "advise", *BASE, *snap, "--pods", "4", "--required", LB)
    assert code == 3 and doc["fits"] is False
    assert doc["message"].startswith('topology "oci-rdma" allows to fit only 3 out of 4 pod(s)')
    assert doc["message"].endswith('excluded: resource "nvidia.com/gpu": 3')
    assert doc["narrowest_fit_now"] == NB and doc["narrowest_fit_empty"] == LB

    code, doc = run_json(capsys, "advise", *BASE, *snap, "--pods", "4", "--preferred", LB)
    assert code == 0 and doc["level"] == NB  # climbed one level, to nb1
    assert [a["node"] for a in doc["assignment"]] == ["a2", "a3", "a4", "b1"]
    code, doc = run_json(capsys, "advise", *BASE, *snap, "--pods", "6", "--preferred", LB)
    assert code == 0 and doc["level"] == ISLAND
    assert sum(a["count"] for a in doc["assignment"]) == 6
    assert doc["annotations"] == {"kueue.x-k8s.io/podset-preferred-topology": LB}

    code, doc = run_json(capsys, "advise", *BASE, *snap, "--pods", "2", "--unconstrained")
    # LeastFreeCapacity at node level: every free node ties on 1 pod, names decide
    assert code == 0 and [a["node"] for a in doc["assignment"]] == ["a2", "a3"]
    assert doc["annotations"] == {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}
    assert doc["volcano"] is None

    code, doc = run_json(capsys, "advise", *BASE, *snap, "--pods", "7", "--unconstrained")
    assert code == 0 and len(doc["assignment"]) == 7
    code, doc = run_json(capsys, "advise", *BASE, *snap, "--pods", "8", "--unconstrained")
    assert code == 3
    assert doc["message"] == (
        'topology "oci-rdma" allows to fit only 7 out of 8 pod(s). '
        'Total nodes: 10; excluded: resource "nvidia.com/gpu": 3'
    )


def test_default_mode_is_kueues_implicit_unconstrained(
    oci3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = run_json(capsys, "advise", *BASE, "--from-snapshot", str(oci3), "--pods", "1")
    assert code == 0 and doc["mode"] == "unconstrained"


def test_slices_and_multi_layer_slices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # nb1 ⊃ lb1 {4 nodes × 4 pods}, lb2 {2 nodes × 4 pods}; 4 GPUs a pod, 2 a node
    spec = [(("i", "nb1", "lb1"), f"a{i}", 8, 0) for i in range(4)]
    spec += [(("i", "nb1", "lb2"), f"b{i}", 8, 0) for i in range(2)]
    path = write_snapshot(tmp_path / "s.json", gpu_nodes([ISLAND, NB, LB], spec), fmt="json")
    snap = ["--from-snapshot", str(path)]
    base = ["--profile", "oci-rdma", "--request", "nvidia.com/gpu=4", *snap]
    code, doc = run_json(
        capsys, "advise", *base, "--pods", "12", "--required", "network_block",
        "--slice-size", "4", "--slice-level", "local_block",
    )  # fmt: skip
    assert code == 0
    per_lb: dict[str, int] = {}
    for a in doc["assignment"]:
        per_lb[a["domains"][LB]] = per_lb.get(a["domains"][LB], 0) + a["count"]
    assert all(v % 4 == 0 for v in per_lb.values())
    assert doc["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": NB,
        "kueue.x-k8s.io/podset-slice-required-topology": LB,
        "kueue.x-k8s.io/podset-slice-size": "4",
    }
    code, doc = run_json(
        capsys, "advise", *base, "--pods", "12", "--required", "network_block",
        "--slice-size", "6", "--slice-level", "local_block",
    )  # fmt: skip
    assert code == 3
    assert doc["message"] == 'topology "oci-rdma" allows to fit only 1 out of 2 slice(s)'
    code, doc = run_json(
        capsys, "advise", *base, "--pods", "8", "--required", "network_block",
        "--slice-size", "8", "--slice-level", "local_block", "--slice-layer", "hostname=2",
    )  # fmt: skip
    assert code == 0 and {a["count"] for a in doc["assignment"]} == {2}
    constraints = json.loads(
        doc["annotations"]["kueue.x-k8s.io/podset-slice-required-topology-constraints"]
    )
    assert constraints == [{"topology": LB, "size": 8}, {"topology": HOST, "size": 2}]


def test_tolerations_node_selector_and_flavor_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = {ISLAND: "i", NB: "nb1", LB: "lb1", "pool": "h100"}
    gpu = {"nvidia.com/gpu": "8", "pods": "110"}
    taint = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    items = [
        node("t1").hostname().labels(labels).allocatable(gpu).taints([taint]).obj(),
        node("t2").hostname().labels({**labels, "disk": "nvme"}).allocatable(gpu).obj(),
        node("other").hostname().labels({**labels, "pool": "a100"}).allocatable(gpu).obj(),
    ]
    snap = ["--from-snapshot", str(write_snapshot(tmp_path / "t.yaml", items))]
    flavor = ["--flavor-node-label", "pool=h100"]
    code, doc = run_json(capsys, "advise", *BASE, *snap, *flavor, "--pods", "2", "--required", LB)
    assert code == 3
    assert doc["message"] == (
        'topology "oci-rdma" allows to fit only 1 out of 2 pod(s). '
        'Total nodes: 2; excluded: taint "dedicated=ml:NoSchedule": 1'
    )
    assert doc["outside"] == [
        {"node": "other", "reason": "does not match flavor node label pool=h100"}
    ]
    tol = ["--toleration", "dedicated=ml:NoSchedule"]
    job = ["--pods", "2", "--required", LB]
    code, doc = run_json(capsys, "advise", *BASE, *snap, *flavor, *tol, *job)
    assert code == 0
    code, doc = run_json(
        capsys, "advise", *BASE, *snap, *flavor, *tol, "--node-selector", "disk=nvme",
        "--pods", "2", "--required", LB, "--topology-name", "h100-topology",
    )  # fmt: skip
    assert doc["message"] == (
        'topology "h100-topology" allows to fit only 1 out of 2 pod(s). '
        "Total nodes: 2; excluded: nodeSelector: 1"
    )


def test_two_level_ascend_superpods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    npu = {"huawei.com/Ascend910": "16", "cpu": "192", "pods": "110"}
    items = []
    for g, sp, n, busy in (
        ("0", "0", 3, 1), ("0", "1", 2, 0), ("1", "2", 4, 2),
    ):  # fmt: skip
        for i in range(n):
            name = f"npu-{sp}-{i}"
            labels = {ASCEND_TREE_LABEL: "default", ASCEND_GROUP: g, ASCEND_SUPERPOD: sp}
            items.append(node(name).hostname().labels(labels).allocatable(npu).obj())
            if i < busy:
                items.append(
                    pod(f"job-{name}")
                    .on(name)
                    .requests({"huawei.com/Ascend910": "16", "cpu": "8"})
                    .obj()
                )
    snap = write_snapshot(tmp_path / "ascend.yaml", items)
    base = ["--profile", "ascend-superpod", "--from-snapshot", str(snap)]
    req = ["--request", "huawei.com/Ascend910=16,cpu=32"]
    code, doc = run_json(capsys, "advise", *base, *req, "--pods", "3", "--required", "superpod")
    assert code == 3
    assert doc["message"].startswith('topology "ascend-superpod" allows to fit only 2 out of 3')
    assert doc["narrowest_fit_now"] == ASCEND_GROUP
    assert doc["narrowest_fit_empty"] == ASCEND_SUPERPOD
    code, doc = run_json(capsys, "advise", *base, *req, "--pods", "3", "--required", "group")
    assert code == 0 and {a["domains"][ASCEND_GROUP] for a in doc["assignment"]} == {"0"}
    # superpods 0 and 1 tie on 2 free each: 0 is filled first, then 1 pod on npu-1-0
    assert [a["node"] for a in doc["assignment"]] == ["npu-0-1", "npu-0-2", "npu-1-0"]


def test_domains_inventory(oci3: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "domains", *BASE, "--from-snapshot", str(oci3), "--pods", "2")
    assert code == 0
    by = {lv["name"]: {d["domain"]: d for d in lv["domains"]} for lv in doc["levels"]}
    assert set(by) == {"hpc_island", "network_block", "local_block"}
    lb1 = by["local_block"]["lb1"]
    assert (lb1["total"], lb1["free"], lb1["jobs"]) == (5, 3, 1)
    assert lb1["nodes"] == ["a1", "a2", "a3", "a4", "a5"]
    assert by["network_block"]["nb1"]["free"] == 4 and by["network_block"]["nb1"]["jobs"] == 2
    assert by["hpc_island"]["i"]["jobs"] == 3
    main(["domains", *BASE, "--from-snapshot", str(oci3), "--pods", "2", "--show-nodes"])
    text = capsys.readouterr().out
    assert "JOBS×2" in text and "i/nb1/lb1/a5" in text
    code, doc = run_json(
        capsys, "domains", *BASE, "--from-snapshot", str(oci3), "--pods", "4",
        "--slice-size", "2", "--slice-level", "local_block",
    )  # fmt: skip
    by = {lv["name"]: {d["domain"]: d for d in lv["domains"]} for lv in doc["levels"]}
    assert by["network_block"]["nb1"]["jobs"] == 0  # lb1: 1 pair, lb2: 0 pairs
    assert by["hpc_island"]["i"]["jobs"] == 1  # lb1 pair + lb3 pair


@pytest.mark.parametrize(
    ("args", "code", "text"),
    [
        (["--from-snapshot", "/nonexistent.yaml"], 1, "/nonexistent.yaml: cannot read snapshot"),
        (["--from-snapshot", str(EXAMPLE), "--required", "rack"], 2, "no level 'rack'"),
        (["--from-snapshot", str(EXAMPLE), "--slice-size", "2"], 2, "go together"),
        (["--from-snapshot", str(EXAMPLE), "--request", "cpu=lots"], 2, "--request cpu=lots"),
        (["--from-snapshot", str(EXAMPLE), "--toleration", "k:Never"], 2, "effect must be"),
    ],
)
def test_errors_say_what_to_do(
    args: list[str], code: int, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["advise", *BASE, "--pods", "4", *args]) == code
    assert text in capsys.readouterr().err


def test_bad_snapshot_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: List\nitems:\n- kind: Node\n  metadata: {}\n", encoding="utf-8")
    r = cli("domains", *BASE, "--from-snapshot", str(bad))
    assert r.returncode == 1
    assert f"{bad}: items[0]: a Node needs metadata.name" in r.stderr


def test_a_cluster_without_labels_says_to_label_it_first(tmp_path: Path) -> None:
    gpus = {"nvidia.com/gpu": "8", "pods": "110"}
    items = [node(f"g{i}").hostname().allocatable(gpus).obj() for i in range(3)]
    snap = write_snapshot(tmp_path / "bare.yaml", items)
    r = cli("advise", *BASE, "--from-snapshot", str(snap), "--pods", "1", "--required", LB)
    assert r.returncode == 3
    assert "no node is in the topology" in r.stdout
    assert "topology-labeler apply" in r.stdout
