"""``topology-labeler agent --profile ascend-superpod --once`` end to end: the CLI as a
subprocess, a fake ``npu-smi`` on its PATH (or the fake ``libdcmi.so``), the fake API
server over HTTP with the real client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labeler.core.node import OWNED_ANNOTATION, OWNERS_ANNOTATION
from labeler.core.profiles import (
    ASCEND_GROUP,
    ASCEND_RACK,
    ASCEND_SERVER,
    ASCEND_SUPERPOD,
    ASCEND_TREE_LABEL,
)
from tests.fakekube import FakeKube
from tests.sources.ascend_fakes import FakeNpuSmi, build_fake_dcmi, c_compiler

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NODE = "npu-node-1"


@pytest.fixture
def npu_smi(tmp_path: Path) -> FakeNpuSmi:
    return FakeNpuSmi(tmp_path / "bin").set(default={"id": 7, "server": 40})


def agent(
    kubeconfig: Path, npu_smi: FakeNpuSmi, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    run_env = npu_smi.env()
    run_env["PYTHONPATH"] = str(ROOT)
    run_env.pop("NODE_NAME", None)
    run_env.update(env or {})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "labeler",
            "agent",
            "--kubeconfig",
            str(kubeconfig),
            "--profile",
            "ascend-superpod",
            "--node-name",
            NODE,
            "--once",
            *extra,
        ],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def labels(fake: FakeKube) -> dict[str, str]:
    return dict(fake.get_node(NODE)["metadata"].get("labels") or {})


def test_labels_appear_then_rerun_writes_nothing(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi
) -> None:
    fake_kube.add_node(NODE, labels={ASCEND_GROUP: "2"})
    done = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert done.returncode == 0, done.stderr
    got = labels(fake_kube)
    assert got[ASCEND_TREE_LABEL] == "default"
    assert got[ASCEND_SUPERPOD] == "7"
    assert ASCEND_SERVER not in got and ASCEND_RACK not in got  # A3: superpod only
    assert got[ASCEND_GROUP] == "2"  # bulk/LLD owns groupid; the agent leaves it alone
    owned = fake_kube.get_node(NODE)["metadata"]["annotations"][OWNED_ANNOTATION]
    assert owned == f"{ASCEND_TREE_LABEL},{ASCEND_SUPERPOD}"
    assert fake_kube.count("patch") == 1

    fake_kube.clear_journal()
    again = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert again.returncode == 0, again.stderr
    assert fake_kube.count("patch") == 0
    assert "already current" in again.stdout


def test_topotree_name_flag(fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi) -> None:
    fake_kube.add_node(NODE)
    done = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi", "--topotree-name", "pod-a")
    assert done.returncode == 0, done.stderr
    assert labels(fake_kube)[ASCEND_TREE_LABEL] == "pod-a"


def test_empty_topotree_name_is_refused_before_any_request(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi
) -> None:
    fake_kube.add_node(NODE)
    done = agent(kubeconfig, npu_smi, "--topotree-name", "")
    assert done.returncode == 2
    assert "--topotree-name must not be empty" in done.stderr
    assert fake_kube.journal == []


def test_invalid_superpod_id_leaves_node_unlabeled(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi
) -> None:
    npu_smi.set(default={"id": 4294967295, "server": 4294967295})
    fake_kube.add_node(NODE)
    done = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert done.returncode == 0, done.stderr
    assert "no topology data" in done.stdout and "4294967295" in done.stdout
    assert fake_kube.count("patch") == 0
    assert ASCEND_TREE_LABEL not in labels(fake_kube)
    assert ASCEND_SUPERPOD not in labels(fake_kube)


def test_device_plugin_equal_value_is_claimed_with_one_annotation_write(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi
) -> None:
    """The device plugin set the same SuperPoD ID (it writes it once at start, from the
    same hardware): no fight, so the agent records it as its own with one annotation
    write, the label untouched, and a later change of the ID is its to make."""
    fake_kube.add_node(NODE, labels={ASCEND_SUPERPOD: "7", ASCEND_TREE_LABEL: "default"})
    before = labels(fake_kube)
    done = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert done.returncode == 0, done.stderr
    assert fake_kube.count("patch") == 1
    [patch] = [e for e in fake_kube.journal if e.verb == "patch"]
    assert "labels" not in patch.body["metadata"]
    meta = fake_kube.get_node(NODE)["metadata"]
    assert meta["annotations"][OWNED_ANNOTATION] == ASCEND_SUPERPOD  # the tree label: not set
    assert json.loads(meta["annotations"][OWNERS_ANNOTATION]) == {ASCEND_SUPERPOD: "agent"}
    assert labels(fake_kube) == before

    fake_kube.clear_journal()
    again = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert again.returncode == 0, again.stderr
    assert fake_kube.count("patch") == 0  # steady state: no write after the claim

    npu_smi.set(default={"id": 8, "server": 40})  # the host moved: ours to change now
    moved = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert moved.returncode == 0, moved.stderr
    assert labels(fake_kube)[ASCEND_SUPERPOD] == "8"


def test_device_plugin_different_value_is_a_conflict(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi
) -> None:
    fake_kube.add_node(NODE, labels={ASCEND_SUPERPOD: "99", ASCEND_TREE_LABEL: "default"})
    done = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert done.returncode == 3, done.stderr
    assert ASCEND_SUPERPOD in done.stderr and "'99'" in done.stderr
    assert labels(fake_kube)[ASCEND_SUPERPOD] == "99"


def test_partial_devices_still_label(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi
) -> None:
    npu_smi.set(spod={"0:0": "fail"}, default={"id": 12})
    fake_kube.add_node(NODE)
    done = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert done.returncode == 0, done.stderr
    assert labels(fake_kube)[ASCEND_SUPERPOD] == "12"


def test_driver_failure_is_an_error_and_keeps_labels(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi
) -> None:
    fake_kube.add_node(NODE)
    assert agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi").returncode == 0
    npu_smi.set(default="garbage")
    fake_kube.clear_journal()
    done = agent(kubeconfig, npu_smi, "--ascend-reader", "npu-smi")
    assert done.returncode == 1
    assert "spod-info" in done.stderr
    assert fake_kube.count("patch") == 0
    assert labels(fake_kube)[ASCEND_SUPERPOD] == "7"


def test_missing_npu_smi_says_what_to_mount(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi, tmp_path: Path
) -> None:
    fake_kube.add_node(NODE)
    done = agent(
        kubeconfig,
        npu_smi,
        "--ascend-reader",
        "npu-smi",
        "--npu-smi",
        str(tmp_path / "absent" / "npu-smi"),
    )
    assert done.returncode == 1
    assert "npu-smi not found" in done.stderr and "/usr/local/bin/npu-smi" in done.stderr


def test_dcmi_reader_labels_an_a5_node(
    fake_kube: FakeKube, kubeconfig: Path, npu_smi: FakeNpuSmi, tmp_path: Path
) -> None:
    if c_compiler() is None:
        pytest.skip("no C compiler: cannot build the fake libdcmi.so")
    lib = build_fake_dcmi(tmp_path)
    fake_kube.add_node(NODE)
    dcmi = {
        "FAKE_DCMI_SUPERPOD": "3",
        "FAKE_DCMI_SERVER": "5",
        "FAKE_DCMI_CHASSIS": "2",
        "FAKE_DCMI_TYPE": "1",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DCMI_")}
    env.update(dcmi)
    npu_smi.set(default="fail")  # proves the labels came from DCMI
    done = agent(kubeconfig, npu_smi, "--ascend-reader", "dcmi", "--dcmi-lib", str(lib), env=env)
    assert done.returncode == 0, done.stderr
    got = labels(fake_kube)
    assert (got[ASCEND_SUPERPOD], got[ASCEND_RACK], got[ASCEND_SERVER]) == ("3", "2", "5")
    assert got[ASCEND_TREE_LABEL] == "default"
