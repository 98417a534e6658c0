"""Two writers of ours on one node: the running agent and ``apply``. Each key has one owner
(the ``topology-labeler.io/owned-by`` annotation), so they never fight silently: the one
that does not own a key reports a conflict, and ``--adopt`` hands the key over for good.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labeler.core.node import OWNED_ANNOTATION, OWNERS_ANNOTATION
from tests.e2e.fake_imds import RDMA, FakeImds, rdma_doc
from tests.e2e.test_agent import K, Runner, annotations, labels
from tests.fakekube import FakeKube
from tests.helpers import cli_env, free_port, http_get, wait_for

pytestmark = pytest.mark.slow


def apply(kubeconfig: Path, csv: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env.pop("KUBECONFIG", None)
    args = ["apply", "--config-path", str(csv), "--kubeconfig", str(kubeconfig), *extra]
    return subprocess.run(
        [sys.executable, "-m", "labeler", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def conflicts_counted(port: int) -> float:
    text = http_get(f"http://127.0.0.1:{port}/metrics")[1]
    for line in text.splitlines():
        if line.startswith("topology_labeler_label_conflicts_total "):
            return float(line.split()[1])
    return 0.0


def test_apply_and_the_running_agent_never_fight_over_a_key(
    fake_kube: FakeKube, kubeconfig: Path, imds: FakeImds, tmp_path: Path
) -> None:
    fake_kube.add_node("w1")
    imds.set("w1", RDMA, rdma_doc("i", "nb", "lb1", "h1"))
    port = free_port()
    proc = Runner(kubeconfig, imds).start("w1", "--port", str(port), "--interval", "0.5")
    try:
        wait_for(lambda: K.local_block in labels(fake_kube, "w1"), 15, what="agent labels")
        ours = labels(fake_kube, "w1")[K.local_block]
        owners = json.loads(annotations(fake_kube, "w1")[OWNERS_ANNOTATION])
        assert owners[K.local_block] == "agent"

        csv = tmp_path / "labels.csv"
        csv.write_text(f"nodeName,{K.local_block}\nw1,rack-by-hand\n")
        refused = apply(kubeconfig, csv)
        assert refused.returncode == 3, refused.stderr
        assert "owned by the topology-labeler agent" in refused.stdout
        time.sleep(1.5)  # several agent reads: still nothing flips
        assert labels(fake_kube, "w1")[K.local_block] == ours

        fake_kube.clear_journal()
        taken = apply(kubeconfig, csv, "--adopt")
        assert taken.returncode == 0, taken.stderr
        assert labels(fake_kube, "w1")[K.local_block] == "rack-by-hand"
        owners = json.loads(annotations(fake_kube, "w1")[OWNERS_ANNOTATION])
        assert owners[K.local_block] == "bulk"
        assert K.local_block in annotations(fake_kube, "w1")[OWNED_ANNOTATION].split(",")
        # The agent now reports a conflict instead of reverting: one patch (apply's) only.
        wait_for(lambda: conflicts_counted(port) >= 1, 10, what="the agent's conflict")
        time.sleep(1.5)
        assert labels(fake_kube, "w1")[K.local_block] == "rack-by-hand"
        assert fake_kube.count("patch") == 1
        reasons = [o.get("reason") for o in fake_kube.objects("Event")]
        assert "TopologyLabelConflict" in reasons
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_agent_claims_an_equal_value_left_by_another_labeler_then_follows_the_host(
    fake_kube: FakeKube, kubeconfig: Path, imds: FakeImds
) -> None:
    """Migration from oci-hpc-oke's labeler (same values with --encoding suffix:11): the
    equal values are claimed with one annotation write, and a later change of the host is
    the agent's to make, not a conflict forever."""
    doc = rdma_doc("i", "nb", "lb1", "h1")
    theirs = {
        K.hpc_island: doc["customerHPCIslandId"][-11:],
        K.network_block: doc["customerNetworkBlock"][-11:],
        K.local_block: doc["customerLocalBlock"][-11:],
        K.host: doc["customerHostId"][-11:],
    }
    before = labels(fake_kube, fake_kube.add_node("m1", labels=theirs)["metadata"]["name"])
    imds.set("m1", RDMA, doc)
    runner = Runner(kubeconfig, imds)
    [first] = runner.once(("m1", "--encoding", "suffix:11"))
    assert first.returncode == 0, first.stderr
    assert labels(fake_kube, "m1") == before  # untouched
    [patch] = fake_kube.requests(verb="patch")
    assert set(patch.body["metadata"]) == {"annotations", "resourceVersion"}
    owners = json.loads(annotations(fake_kube, "m1")[OWNERS_ANNOTATION])
    assert owners == dict.fromkeys(theirs, "agent")

    fake_kube.clear_journal()
    [again] = runner.once(("m1", "--encoding", "suffix:11"))
    assert again.returncode == 0, again.stderr
    assert fake_kube.count("patch") == 0  # steady state after the one claim write

    imds.set("m1", RDMA, rdma_doc("i", "nb", "lb2", "h1"))  # the host moved
    [moved] = runner.once(("m1", "--encoding", "suffix:11"))
    assert moved.returncode == 0, moved.stderr
    assert (
        labels(fake_kube, "m1")[K.local_block]
        == rdma_doc("i", "nb", "lb2", "h1")["customerLocalBlock"][-11:]
    )
