"""The agent as deployed, on the real API server: the ServiceAccount, RBAC and admission
policy of ``manifests/`` applied with the real kubectl, and the agent run under that
ServiceAccount's pod-bound token, so that the real admission chain (the policy's CEL in the
API server's own environment) judges every write."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kubernetes
import pytest

from labeler.core.profiles import oci_rdma
from labeler.sources.oci_imds import ROLES
from tests.e2e.fake_imds import RDMA, FakeImds, rdma_doc
from tests.helpers import wait_for
from tests.realkube import cluster, processes
from tests.realkube.controlplane import ControlPlane

K = SimpleNamespace(**oci_rdma().keys_for(ROLES))
LEVELS = (K.hpc_island, K.network_block, K.local_block)
GATE = {"key": "topology-labeler.io/not-ready", "value": "true", "effect": "NoSchedule"}
OTHER = {"key": "gpu.example.com/maintenance", "value": "true", "effect": "NoSchedule"}
FOREIGN = {"team.example.com/owner": "ml-infra"}
OWNER = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "name": "keeper",
    "uid": "0c9f6ab6-6a7e-4b8e-9d1c-3e0d8a1b2c3d",
}


@pytest.fixture(scope="module")
def deployed(real_kube: ControlPlane) -> ControlPlane:
    cluster.deploy_agent(real_kube)
    return real_kube


@pytest.fixture
def node(deployed: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A node of this test's own, registered with a foreign label, a foreign taint, the
    readiness gate's taint, an ownerReference and a finalizer: everything the agent must
    leave alone."""
    name = "rk-" + request.node.name.removeprefix("test_").replace("_", "-")[:40].strip("-")
    cluster.add_node(
        deployed,
        name,
        labels=FOREIGN,
        taints=[OTHER, GATE],
        ownerReferences=[OWNER],
        finalizers=["example.com/keep"],
    )
    yield name
    release(deployed, name, check=False)  # a replaced node has no finalizer left
    cluster.delete_nodes(deployed, name)


def release(plane: ControlPlane, node: str, check: bool = True) -> None:
    """Take the node's finalizer off as its owner would, so that it can be deleted."""
    ops = '[{"op":"remove","path":"/metadata/finalizers"}]'
    plane.kubectl("patch", "node", node, "--type=json", "-p", ops, check=check)


def agent_args(node: str, imds: FakeImds, profile: str = "oci-rdma") -> tuple[str, ...]:
    return ("agent", "--profile", profile, "--node-name", node, "--imds-url", imds.url_for(node),
            "--imds-timeout", "2", "--imds-attempts", "1")  # fmt: skip


def run_agent(
    kubeconfig: Path, node: str, imds: FakeImds, *extra: str
) -> subprocess.CompletedProcess[str]:
    return processes.cli(*agent_args(node, imds), "--once", *extra, kubeconfig=kubeconfig)


def condition(node: dict[str, Any]) -> dict[str, Any] | None:
    conditions = node.get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "TopologyLabeled"), None)


def test_agent_labels_its_own_node_and_leaves_everything_else(
    deployed: ControlPlane, node: str, imds: FakeImds
) -> None:
    imds.set(node, RDMA, rdma_doc("island", "nb", "lb", "host"))
    identity = cluster.agent_kubeconfig(deployed, node)
    result = run_agent(identity, node, imds, "--remove-taint", "--set-condition")
    assert result.returncode == 0, result.stderr
    obj = cluster.get_node(deployed, node)
    labels = obj["metadata"]["labels"]
    assert all(labels.get(k) for k in (*LEVELS, K.host)), labels
    assert labels["team.example.com/owner"] == "ml-infra"
    assert obj["spec"]["taints"] == [OTHER]  # the gate went, the foreign taint stayed
    assert obj["metadata"]["ownerReferences"][0]["uid"] == OWNER["uid"]
    assert obj["metadata"]["finalizers"] == ["example.com/keep"]
    cond = condition(obj)
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Labeled")
    # The second run finds nothing to do: the API server's view equals the agent's plan.
    rv = obj["metadata"]["resourceVersion"]
    again = run_agent(identity, node, imds, "--remove-taint", "--set-condition")
    assert again.returncode == 0, again.stderr
    assert cluster.get_node(deployed, node)["metadata"]["resourceVersion"] == rv


def _denied(call: Any) -> str:
    with pytest.raises(kubernetes.client.ApiException) as caught:
        call()
    assert caught.value.status == 403, caught.value.body
    message: str = json.loads(caught.value.body)["message"]
    return message


def test_admission_denies_the_agent_everything_but_its_own_keys_on_its_own_node(
    deployed: ControlPlane, node: str, imds: FakeImds
) -> None:
    other = node[:50] + "-other"
    cluster.add_node(deployed, other)
    try:
        api = cluster.core(deployed, cluster.agent_kubeconfig(deployed, node))
        own = {"metadata": {"labels": {K.local_block: "x"}}}
        api.patch_node(node, own)  # allowed: its own key on its own node
        assert "only the node it runs on" in _denied(lambda: api.patch_node(other, own))
        foreign = {"metadata": {"labels": {"team.example.com/owner": None}}}
        assert "only its own label keys" in _denied(lambda: api.patch_node(node, foreign))
        no_taints = {"spec": {"taints": [GATE]}}  # drops the foreign taint
        assert "taint" in _denied(lambda: api.patch_node(node, no_taints)).lower()
        orphan = [{"op": "remove", "path": "/metadata/ownerReferences"}]
        assert "ownerReferences" in _denied(lambda: api.patch_node(node, orphan))
        unfinal = [{"op": "remove", "path": "/metadata/finalizers"}]
        assert "finalizers" in _denied(lambda: api.patch_node(node, unfinal))
        ready = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "X"}]}}
        assert _denied(lambda: api.patch_node_status(node, ready))
    finally:
        cluster.delete_nodes(deployed, other)


def test_agent_reports_a_denial_clearly_and_writes_nothing(
    deployed: ControlPlane, node: str, imds: FakeImds
) -> None:
    """Run for another node's name with this node's token, the agent is refused by the
    policy: it says so, with the policy's reason, and exits non-zero."""
    other = node[:50] + "-other"
    cluster.add_node(deployed, other)
    try:
        imds.set(other, RDMA, rdma_doc("island", "nb", "lb", "host"))
        result = run_agent(cluster.agent_kubeconfig(deployed, node), other, imds)
        assert result.returncode != 0
        assert "only the node it runs on" in result.stderr, result.stderr
        assert other in result.stderr
        assert not set(LEVELS) & set(cluster.labels_of(deployed, other))
    finally:
        cluster.delete_nodes(deployed, other)


FOREIGN_PROFILE = """
name: own-keys
source: oci-imds
levels:
  - {key: oci.oraclecloud.com/rdma.hpc_island_id, name: hpc_island}
  - {key: example.com/network-block, name: network_block}
"""


def test_agent_reports_a_key_the_policy_does_not_give_it(
    deployed: ControlPlane, node: str, imds: FakeImds, tmp_path: Path
) -> None:
    """A profile with a label key the deployed policy does not list: the API server refuses
    the agent's write; the agent names the node and the policy's reason, and writes none of
    its labels (one patch carries them all)."""
    profile = tmp_path / "own-keys.yaml"
    profile.write_text(FOREIGN_PROFILE)
    imds.set(node, RDMA, rdma_doc("island", "nb", "lb", "host"))
    identity = cluster.agent_kubeconfig(deployed, node)
    result = processes.cli(*agent_args(node, imds, str(profile)), "--once", kubeconfig=identity)
    assert result.returncode != 0
    assert "only its own label keys" in result.stderr, result.stderr
    assert node in result.stderr
    labels = cluster.labels_of(deployed, node)
    assert "example.com/network-block" not in labels and K.hpc_island not in labels


def test_agent_repairs_drift_and_relabels_a_replaced_node(
    deployed: ControlPlane, node: str, imds: FakeImds, tmp_path: Path
) -> None:
    imds.set(node, RDMA, rdma_doc("island", "nb", "lb", "host"))
    identity = cluster.agent_kubeconfig(deployed, node)
    log = tmp_path / "agent.log"
    with processes.running(log, *agent_args(node, imds), "--port", "0", kubeconfig=identity):
        want = wait_for(
            lambda: (lb := cluster.labels_of(deployed, node).get(K.local_block)) and lb,
            timeout=30,
            what="the agent's first labels",
        )
        # Drift: someone with more rights changes one of the agent's labels.
        deployed.kubectl("label", "node", node, f"{K.local_block}=tampered", "--overwrite")
        wait_for(
            lambda: cluster.labels_of(deployed, node).get(K.local_block) == want,
            timeout=30,
            what="the drift repaired",
        )
        # Replacement: the node object goes and comes back under the same name, bare.
        release(deployed, node)
        deployed.kubectl("delete", "node", node)
        cluster.add_node(deployed, node, labels=FOREIGN)
        wait_for(
            lambda: cluster.labels_of(deployed, node).get(K.local_block) == want,
            timeout=30,
            what="the replaced node labeled again",
        )
        # The labeling was told as an Event on the node, posted under the agent's identity
        # (repairs right after it are rate-limited by reason, so they may add none).
        listed = deployed.kubectl(
            "get", "events", "-A", "--field-selector", f"involvedObject.name={node}", "-o", "json"
        )
        reasons = [e["reason"] for e in json.loads(listed.stdout)["items"]]
        assert "TopologyLabelsUpdated" in reasons, reasons
