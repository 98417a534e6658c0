"""The chart on the real control plane: every profile's objects pass the API server's own
validation; install, upgrade and uninstall work; the installed admission policy holds the
agent to its own label keys; and an uninstall leaves nothing of ours but the node labels.

There is no kube-controller-manager: DaemonSets make no pods and namespaces never finish
deleting, so each test works in a namespace of its own and checks objects and admission."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helm.helpers import CHART, EXAMPLES, PROFILES, Helm, objects
from tests.realkube.controlplane import ControlPlane

FOREIGN_DENIED = "the topology-labeler agent may add, change or remove only its own label keys"
OTHER_NODE_DENIED = "the topology-labeler agent may change only the node it runs on"
OWN_KEY = "oci.oraclecloud.com/rdma.hpc_island_id"


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def namespace(real_kube: ControlPlane) -> Iterator[str]:
    """A namespace of the test's own; its deletion is asked for, never waited on."""
    name = _unique("chart")
    real_kube.kubectl("create", "namespace", name)
    yield name
    real_kube.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def nodes(real_kube: ControlPlane) -> Iterator[list[str]]:
    """Two GPU nodes of the test's own, deleted afterwards."""
    names = [_unique("gpu"), _unique("gpu")]
    for name in names:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}},
        }
        real_kube.kubectl("create", "-f", "-", input=json.dumps(node))
    yield names
    real_kube.kubectl("delete", "node", *names, "--ignore-not-found", check=False)


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_passes_a_server_side_dry_run(
    profile: str,
    real_kube: ControlPlane,
    cluster_helm: Helm,
    namespace: str,
    monitoring_crds: None,
) -> None:
    rendered = cluster_helm.template("-f", str(EXAMPLES / f"{profile}.yaml"), namespace=namespace)
    done = real_kube.kubectl(
        "apply", "--server-side", "--dry-run=server", "--field-manager=helm-test", "-f", "-",
        input=rendered, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    applied = [line for line in done.stdout.splitlines() if "(server dry run)" in line]
    assert len(applied) == len(objects(rendered))


def _label_as(real_kube: ControlPlane, kubeconfig: Path, node: str, label: str) -> str:
    """`kubectl label` as another identity; '' when admitted, else kubectl's message."""
    done = real_kube.kubectl(
        "label", "node", node, label, "--overwrite", kubeconfig=kubeconfig, check=False
    )
    return "" if done.returncode == 0 else done.stderr


def _denied_once_live(real_kube: ControlPlane, kubeconfig: Path, node: str, label: str) -> str:
    """The denial of a write, waiting (at most a minute) for a new policy to be loaded by
    the API server's admission, which reads policies through an informer."""
    deadline = time.monotonic() + 60
    while True:
        message = _label_as(real_kube, kubeconfig, node, label)
        if message or time.monotonic() > deadline:
            return message
        # Admitted before the policy was live: take the label off again as the admin.
        real_kube.kubectl("label", "node", node, label.split("=")[0] + "-")
        time.sleep(0.5)


def test_install_upgrade_uninstall_with_the_policy_live(
    real_kube: ControlPlane, cluster_helm: Helm, namespace: str, nodes: list[str]
) -> None:
    release = _unique("tl")
    agent = f"{release}-topology-labeler-agent"
    cluster_helm.run("install", release, str(CHART), "-n", namespace)
    status = json.loads(cluster_helm.run("status", release, "-n", namespace, "-o", "json").stdout)
    assert status["info"]["status"] == "deployed" and status["version"] == 1

    # The agent's identity: a token of its ServiceAccount bound to the first node, as the
    # kubelet's pod-bound token is (the policy reads the node's name from it).
    mine, other = nodes
    token = real_kube.kubectl(
        "create",
        "token",
        agent,
        "-n",
        namespace,
        "--bound-object-kind=Node",
        f"--bound-object-name={mine}",
    ).stdout.strip()
    as_agent = real_kube.token_kubeconfig(_unique("agent"), token)
    assert FOREIGN_DENIED in _denied_once_live(real_kube, as_agent, mine, "foreign.example/key=v")
    assert "foreign.example/key" not in _labels(real_kube, mine)
    # RBAC lets it through; the policy lets its own key through on its own node only.
    assert _label_as(real_kube, as_agent, mine, f"{OWN_KEY}=island-1") == ""
    assert OTHER_NODE_DENIED in _label_as(real_kube, as_agent, other, f"{OWN_KEY}=island-1")

    # Upgrade with changed values: the DaemonSet and the policy follow.
    cluster_helm.run(
        "upgrade", release, str(CHART), "-n", namespace,
        "--set", "agent.interval=300",
        "--set", "agent.readinessGate.removeTaint=true",
        "--set", "agent.readinessGate.taint=example.com/gate",
    )  # fmt: skip
    status = json.loads(cluster_helm.run("status", release, "-n", namespace, "-o", "json").stdout)
    assert status["info"]["status"] == "deployed" and status["version"] == 2
    ds = _get(real_kube, "daemonset", agent, namespace)
    args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-2:] == ["--interval=300", "--remove-taint=example.com/gate"]
    policy = _get(real_kube, "validatingadmissionpolicy", agent)
    gate = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}["gateTaint"]
    assert gate == "'example.com/gate'"

    cluster_helm.run("uninstall", release, "-n", namespace)
    assert _ours(real_kube, release, namespace) == []
    assert cluster_helm.run("list", "-n", namespace, "-q").stdout.strip() == ""
    # The node labels stay (README: uninstalling removes the agent, never its labels).
    assert _labels(real_kube, mine)[OWN_KEY] == "island-1"


def test_a_custom_profile_installs_and_uninstalls(
    real_kube: ControlPlane, cluster_helm: Helm, namespace: str
) -> None:
    release = _unique("tl")
    cluster_helm.run(
        "install", release, str(CHART), "-n", namespace, "-f", str(EXAMPLES / "custom.yaml")
    )
    config = _get(real_kube, "configmap", f"{release}-topology-labeler-profile", namespace)
    assert "example.com/island" in config["data"]["profile.yaml"]
    cluster_helm.run("uninstall", release, "-n", namespace)
    assert _ours(real_kube, release, namespace) == []


def test_a_wrong_value_is_refused_at_install_and_nothing_is_made(
    real_kube: ControlPlane, cluster_helm: Helm, namespace: str
) -> None:
    release = _unique("tl")
    done = cluster_helm.run(
        "install", release, str(CHART), "-n", namespace, "--set", "agent.interval=-5", check=False
    )
    assert done.returncode != 0
    assert "/agent/interval" in done.stderr, done.stderr
    assert cluster_helm.run("list", "-n", namespace, "-q").stdout.strip() == ""
    assert _ours(real_kube, release, namespace) == []


def _get(
    real_kube: ControlPlane, kind: str, name: str, namespace: str | None = None
) -> dict[str, object]:
    where = ["-n", namespace] if namespace else []
    doc: dict[str, object] = json.loads(
        real_kube.kubectl("get", kind, name, *where, "-o", "json").stdout
    )
    return doc


def _labels(real_kube: ControlPlane, node: str) -> dict[str, str]:
    labels: dict[str, str] = _get(real_kube, "node", node)["metadata"]["labels"]  # type: ignore[index]
    return labels


# Every kind the chart can make, and the namespace's Secrets (Helm's release records).
NAMESPACED = "daemonsets,deployments,services,serviceaccounts,configmaps,secrets"
CLUSTER = (
    "clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings"
)


def _ours(real_kube: ControlPlane, release: str, namespace: str) -> list[str]:
    """What is left in the cluster of the release: by Helm's instance label, by name, and
    Helm's own records."""
    left: list[str] = []
    for kinds, where in ((NAMESPACED, ["-n", namespace]), (CLUSTER, [])):
        out = real_kube.kubectl("get", kinds, *where, "-o", "name").stdout.split()
        left += [name for name in out if release in name]
    labelled = real_kube.kubectl(
        "get",
        f"{NAMESPACED},{CLUSTER}",
        "-A",
        "-l",
        f"app.kubernetes.io/instance={release}",
        "-o",
        "name",
    ).stdout.split()
    records = real_kube.kubectl(
        "get", "secrets", "-n", namespace, "-l", f"owner=helm,name={release}", "-o", "name"
    )
    return sorted({*left, *labelled, *records.stdout.split()})
