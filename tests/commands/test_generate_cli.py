"""generate and check through the command line a user types."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labeler.cli import main
from tests.fakekube import FakeKube
from tests.helpers import cli_env

ROOT = Path(__file__).resolve().parents[2]
INPUTS = ROOT / "tests" / "golden" / "inputs"
OCI_CSV = str(INPUTS / "oci.csv")
K = "oci.oraclecloud.com/rdma."


def test_check_ok_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--profile", "oci-rdma", "--from-csv", OCI_CSV]) == 0
    assert "12 labeled" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text(
        f"nodeName,{K}hpc_island_id,{K}network_block_id,{K}local_block_id\n"
        "a,i1,b1,l1\nb,i2,b1,l2\nc,i1,,l3\n"
    )
    assert main(["check", "--profile", "oci-rdma", "--from-csv", str(bad)]) == 3
    out = capsys.readouterr().out
    assert "1 node(s) lack oci.oraclecloud.com/rdma.network_block_id" in out
    assert "network_block_id=b1 sits under 2 values" in out and "i1, i2" in out
    assert "1 partial" in out and "2 inconsistent" in out


def test_generate_refuses_inconsistent_input_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(
        f"nodeName,{K}hpc_island_id,{K}network_block_id,{K}local_block_id\na,i1,b1,l1\nb,i2,b1,l2\n"
    )
    out_dir = tmp_path / "out"
    args = [
        "generate",
        "--profile",
        "oci-rdma",
        "--from-csv",
        str(bad),
        "--output-dir",
        str(out_dir),
    ]
    assert main(args) == 1
    assert "nothing generated" in capsys.readouterr().err
    assert not out_dir.exists()
    assert main([*args, "--force"]) == 0
    assert (out_dir / "volcano-hypernodes.yaml").is_file()


def test_output_dir_and_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["generate", "--profile", "oci-rdma", "--from-csv", OCI_CSV]
    assert main([*base, "--output-dir", str(tmp_path), "--flavor-node-label", "a/b=c"]) == 0
    # Only API objects at the top, so `kubectl apply -f DIR` works; snippets one level down.
    names = sorted(p.name for p in tmp_path.glob("*.yaml"))
    assert names == [
        "kueue-resourceflavor.yaml",
        "kueue-topology.yaml",
        "volcano-hypernodes.yaml",
    ]
    for name in names:
        assert all("kind" in d for d in yaml.safe_load_all((tmp_path / name).read_text()))
    snippets = sorted(p.name for p in (tmp_path / "config-snippets").glob("*.yaml"))
    assert snippets == ["volcano-hypernode-discovery.yaml", "volcano-scheduler-init-params.yaml"]
    capsys.readouterr()
    assert main([*base, "-o", "-", "--emit", "kueue"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["Topology"]  # no ResourceFlavor without node labels


def test_merge_into_alone_only_merges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cm = tmp_path / "cm.yaml"
    cm.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: volcano-scheduler-configmap\n"
        'data:\n  volcano-scheduler.conf: |\n    actions: "enqueue, allocate"\n'
    )
    args = ["generate", "--profile", "ascend-superpod", "--merge-into", str(cm)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "resource-level-config updated" in out and "Topology" not in out
    conf = yaml.safe_load(yaml.safe_load(cm.read_text())["data"]["volcano-scheduler.conf"])
    assert conf["actions"] == "enqueue, allocate"
    assert "superpodid" in conf["configurations"][0]["arguments"]["resource-level-config"]
    assert main(args) == 0
    assert "unchanged" in capsys.readouterr().out
    sa = tmp_path / "sa.yaml"
    sa.write_text("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\n")
    assert main(["generate", "--profile", "oci-rdma", "--merge-into", str(sa)]) == 1
    assert "not a Volcano scheduler ConfigMap" in capsys.readouterr().err


def test_from_cluster_apply_is_idempotent_and_prunes(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    npu = {"huawei.com/Ascend910": "16"}  # in the default scope: nodes with accelerators
    for name, (g, s) in {"n1": ("0", "0"), "n2": ("0", "0"), "n3": ("1", "1")}.items():
        fake_kube.add_node(
            name,
            labels={"huawei.com/topotree.groupid": g, "huawei.com/topotree.superpodid": s},
            allocatable=npu,
        )
    fake_kube.add_node("other-tree", labels={"huawei.com/topotree": "t2"}, allocatable=npu)
    fake_kube.add_node("control-plane")  # no accelerator, no labels: out of scope
    base = ["generate", "--kubeconfig", str(kubeconfig), "--profile", "ascend-superpod"]
    apply = [*base, "--from-cluster", "--apply", "--flavor-node-label", "accelerator=ascend"]
    assert main(apply) == 0
    out = capsys.readouterr().out
    assert "Topology/ascend-superpod created" in out
    assert "ResourceFlavor/ascend-superpod created" in out
    assert "HyperNode/superpod-0 created" in out and "HyperNode/group-1 created" in out
    stored = {o["metadata"]["name"]: o for o in fake_kube.objects("hypernodes")}
    assert stored["group-0"]["spec"]["members"] == [
        {"type": "HyperNode", "selector": {"exactMatch": {"name": "superpod-0"}}}
    ]
    assert main(apply) == 0
    out = capsys.readouterr().out
    assert "created" not in out and "updated" not in out and out.count("unchanged") == 6
    # node n3 moves to superpod 0: superpod-1 and group-1 become stale
    fake_kube.set_node_labels(
        "n3", {"huawei.com/topotree.groupid": "0", "huawei.com/topotree.superpodid": "0"}
    )
    assert main([*apply, "--prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "HyperNode/superpod-0 updated (dry run)" in out
    assert "HyperNode/group-1 deleted (dry run)" in out
    assert len(fake_kube.objects("hypernodes")) == 4
    assert main([*apply, "--prune"]) == 0
    assert sorted(o["metadata"]["name"] for o in fake_kube.objects("hypernodes")) == [
        "group-0",
        "superpod-0",
    ]


def _gpu_cluster(fake_kube: FakeKube) -> None:
    """Two labeled GPU nodes and an unlabeled CPU node, as in any real cluster."""
    for name, local in (("gpu-1", "l1"), ("gpu-2", "l2")):
        fake_kube.add_node(
            name,
            labels={
                f"{K}hpc_island_id": "i1",
                f"{K}network_block_id": "b1",
                f"{K}local_block_id": local,
                "pool": "gpu",
            },
            allocatable={"nvidia.com/gpu": "8"},
        )
    fake_kube.add_node("cpu-1", labels={"pool": "cpu"}, allocatable={"cpu": "64"})


def test_check_from_cluster_scopes_to_accelerator_nodes(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _gpu_cluster(fake_kube)
    base = ["check", "--kubeconfig", str(kubeconfig), "--profile", "oci-rdma", "--from-cluster"]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "2 node(s)" in out and "2 labeled" in out and "cpu-1" not in out
    scope = "nodes with allocatable nvidia.com/gpu or huawei.com/Ascend* > 0 or with gpu.nvidia.com"
    assert f"scope: {scope} devices (DRA); 1 other" in out
    # A selector that covers the CPU node puts it in scope: it lacks every level label.
    assert main([*base, "--node-selector", "pool in (gpu,cpu)"]) == 3
    out = capsys.readouterr().out
    assert "1 unlabeled" in out and "cpu-1" in out
    assert main([*base, "--node-selector", "pool=cpu", "-o", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == 1 and doc["scope"] == "nodes matching pool=cpu"
    assert doc["nodesNotInScope"] == 2 and doc["missing"][f"{K}local_block_id"] == ["cpu-1"]
    # --resource widens the default scope to the CPU node too.
    assert main([*base, "--resource", "nvidia.com/gpu", "--resource", "cpu"]) == 3
    assert "cpu-1" in capsys.readouterr().out


def test_generate_from_cluster_ignores_cpu_nodes(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _gpu_cluster(fake_kube)
    base = ["generate", "--kubeconfig", str(kubeconfig), "--profile", "oci-rdma"]
    assert main([*base, "--from-cluster", "-o", "-", "--emit", "hypernodes"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    members = [m for d in docs if d["spec"]["tier"] == 1 for m in d["spec"]["members"]]
    assert sorted(m["selector"]["exactMatch"]["name"] for m in members) == ["gpu-1", "gpu-2"]
    bad = [*base, "--from-cluster", "--node-selector", "pool=cpu", "-o", "-"]
    assert main(bad) == 1
    assert "nothing generated" in capsys.readouterr().err
    csv_scope = [*base, "--from-csv", OCI_CSV, "--node-selector", "pool=gpu"]
    assert main(csv_scope) == 2
    assert "add --from-cluster" in capsys.readouterr().err


def test_subprocess_end_to_end(tmp_path: Path) -> None:
    env = cli_env()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "labeler",
            "generate",
            "--profile",
            "oci-rdma",
            "--from-csv",
            OCI_CSV,
            "-o",
            "-",
            "--emit",
            "hypernodes",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    docs = list(yaml.safe_load_all(proc.stdout))
    assert len(docs) == 9 and {d["spec"]["tier"] for d in docs} == {1, 2, 3}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "labeler",
            "check",
            "--profile",
            "oci-rdma",
            "--from-csv",
            str(tmp_path / "missing.csv"),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 1 and "no such file; check --from-csv" in proc.stderr


def test_apply_refuses_hypernodes_of_another_topology(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two Ascend trees whose groupids both start at 0 want the same HyperNode names."""
    npu = {"huawei.com/Ascend910": "16"}
    for name, tree, sp in (("a1", "t1", "0"), ("b1", "t2", "1")):
        labels = {"huawei.com/topotree": tree, "huawei.com/topotree.groupid": "0"}
        labels["huawei.com/topotree.superpodid"] = sp
        fake_kube.add_node(name, labels=labels, allocatable=npu)
    fake_kube.add_object(
        "HyperNode",
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "superpod-1"},  # made by hand
            "spec": {"tier": 1, "members": []},
        },
    )
    base = ["generate", "--kubeconfig", str(kubeconfig), "--profile", "ascend-superpod"]
    base += ["--from-cluster", "--apply", "--emit", "hypernodes"]
    # the shared groupid is itself a check error now; --force to reach the ownership guard
    assert main([*base, "--topotree-name", "t1"]) == 1
    assert "used by tree 't1' (nodes a1) and tree 't2' (nodes b1)" in capsys.readouterr().err
    base.append("--force")
    assert main([*base, "--topotree-name", "t1"]) == 0
    assert "HyperNode/group-0 created" in capsys.readouterr().out
    before = fake_kube.objects("hypernodes")
    fake_kube.clear_journal()
    assert main([*base, "--topotree-name", "t2"]) == 1
    err = capsys.readouterr().err
    assert "2 HyperNode(s)" in err and "group-0, superpod-1" in err
    assert "--hypernode-prefix" in err and "Nothing was written" in err
    assert fake_kube.objects("hypernodes") == before
    assert not [r for r in fake_kube.journal if r.verb not in ("get", "list")]
    assert main([*base, "--topotree-name", "t2", "--hypernode-prefix", "t2-"]) == 0
    assert "HyperNode/t2-group-0 created" in capsys.readouterr().out
