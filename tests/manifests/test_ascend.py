"""manifests/ascend/ renders offline and every object is valid Kubernetes, with the
privileges and mounts the Ascend agent is documented to need (and no others)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.manifests.helpers import MANIFESTS, Policy, by_kind, render, validate_all

K8S_VERSION = "1.32.0"  # ValidatingAdmissionPolicy v1 and the node-name token claim are GA


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render(MANIFESTS / "ascend")


def test_every_object_validates(rendered: list[dict[str, Any]]) -> None:
    kinds = sorted(o["kind"] for o in rendered)
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "DaemonSet",
        "Namespace",
        "ServiceAccount",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    validate_all(rendered, K8S_VERSION)


def test_daemonset_runs_the_ascend_profile_on_npu_nodes(rendered: list[dict[str, Any]]) -> None:
    pod = by_kind(rendered, "DaemonSet")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    assert args[0] == "agent" and "--profile=ascend-superpod" in args
    assert any(a.startswith("--topotree-name=") for a in args)
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expr = terms["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert (expr["key"], expr["values"]) == ("accelerator", ["huawei-Ascend910"])
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_daemonset_privileges_are_the_documented_minimum(rendered: list[dict[str, Any]]) -> None:
    pod = by_kind(rendered, "DaemonSet")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    # privileged is needed for the NPU devices; everything else is dropped
    assert sc["privileged"] is True and sc["capabilities"]["drop"] == ["ALL"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] != 0
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for path in ("/usr/local/Ascend/driver", "/usr/local/bin/npu-smi", "/usr/local/dcmi"):
        assert mounts[path]["readOnly"] is True, path
    host_paths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host_paths == {"/usr/local/Ascend/driver", "/usr/local/bin/npu-smi", "/usr/local/dcmi"}


def test_policy_scope_excludes_groupid(rendered: list[dict[str, Any]]) -> None:
    policy = by_kind(rendered, "ValidatingAdmissionPolicy")
    keys = next(v for v in policy["spec"]["variables"] if v["name"] == "keys")["expression"]
    assert "huawei.com/topotree.superpodid" in keys and "groupid" not in keys
    binding = by_kind(rendered, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    sa = by_kind(rendered, "ServiceAccount")["metadata"]
    cond = policy["spec"]["matchConditions"][0]["expression"]
    assert f"system:serviceaccount:{sa['namespace']}:{sa['name']}" in cond


@pytest.fixture(scope="module")
def policy(rendered: list[dict[str, Any]]) -> Policy:
    return Policy(by_kind(rendered, "ValidatingAdmissionPolicy"), user="x")


def _node(labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "npu-1", "labels": labels}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"podCIDR": "10.0.0.0/24"}}


BASE = {"kubernetes.io/hostname": "npu-1", "huawei.com/topotree.groupid": "3"}
OWNED = {"topology-labeler.io/owned-labels": "huawei.com/topotree.superpodid"}
# The claim of an equal value: annotations only, the label as it was.
CLAIM = {**OWNED, "topology-labeler.io/owned-by": '{"huawei.com/topotree.superpodid":"agent"}'}


@pytest.mark.parametrize(
    ("new", "claim", "allowed"),
    [
        (_node({**BASE, "huawei.com/topotree.superpodid": "7"}, OWNED), "npu-1", True),
        (_node({**BASE, "huawei.com/topotree.superpodid": "7"}, OWNED), "npu-2", False),
        (_node({**BASE, "huawei.com/topotree.groupid": "4"}), "npu-1", False),
        (_node({"kubernetes.io/hostname": "npu-1"}), "npu-1", False),  # removes groupid
        (_node(BASE, {"other.io/x": "y"}), "npu-1", False),
        (_node(BASE, CLAIM), "npu-1", True),
    ],
)
def test_policy_cel_allows_only_own_node_and_agent_keys(
    policy: Policy, new: dict[str, Any], claim: str, allowed: bool
) -> None:
    verdicts = policy.verdicts(_node(BASE), new, node_name=claim)
    assert all(verdicts) is allowed, verdicts


def test_policy_cel_forbids_other_metadata_changes(policy: Policy) -> None:
    new = _node(BASE)
    new["metadata"]["finalizers"] = ["example.com/keep"]
    assert not all(policy.verdicts(_node(BASE), new, node_name="npu-1"))


def test_policy_cel_forbids_spec_changes(policy: Policy) -> None:
    new = _node(BASE)
    new["spec"] = {"unschedulable": True}
    assert not all(policy.verdicts(_node(BASE), new, node_name="npu-1"))
