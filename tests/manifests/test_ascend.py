"""manifests/ascend/ renders offline and every object is valid Kubernetes, with the
privileges and mounts the Ascend agent is documented to need (and no others), and the OCI
agent's admission policy narrowed to the Ascend agent and its keys."""

from __future__ import annotations

from typing import Any

import celpy
import pytest

from labeler.core.node import OWNED_ANNOTATION, OWNERS_ANNOTATION, SOURCE_IDS_ANNOTATION
from labeler.core.profiles import ASCEND_GROUP, ascend_superpod
from tests.builders import node
from tests.manifests.helpers import (
    GATE_REMOVALS,
    MANIFESTS,
    OTHER_SPEC_CHANGES,
    SPEC_DENIED,
    STATUS_DENIED,
    STATUS_WRITES,
    Policy,
    by_kind,
    render,
    status_policy,
    tainted,
    validate_all,
    with_status,
)

K8S_VERSION = "1.32.0"  # ValidatingAdmissionPolicy v1 and the node-name token claim are GA
SA = "system:serviceaccount:topology-labeler:topology-labeler-ascend"


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


def test_cluster_scoped_objects_have_no_namespace(rendered: list[dict[str, Any]]) -> None:
    namespaced = {"ServiceAccount", "DaemonSet"}
    for doc in rendered:
        has_namespace = "namespace" in doc["metadata"]
        assert has_namespace is (doc["kind"] in namespaced), doc["kind"]


def test_rbac_is_least_privilege(rendered: list[dict[str, Any]]) -> None:
    role = by_kind(rendered, "ClusterRole")
    rules = {tuple(r["resources"]): sorted(r["verbs"]) for r in role["rules"]}
    assert rules == {
        ("nodes",): ["get", "list", "patch", "watch"],
        ("nodes/status",): ["patch"],  # agent --set-condition, narrowed by the policy
        ("events",): ["create", "patch"],
    }
    binding = by_kind(rendered, "ClusterRoleBinding")
    sa = by_kind(rendered, "ServiceAccount")["metadata"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}
    ]


def test_policy_is_the_base_one_for_the_ascend_agent_and_keys(
    rendered: list[dict[str, Any]],
) -> None:
    """Every rule of the OCI agent's policy (own node, metadata, the gate's taint and
    condition, nodes and nodes/status) holds; only its ServiceAccount, the label keys and
    the annotations differ, and its name, so that both kustomizations apply side by side."""
    base = by_kind(render(MANIFESTS), "ValidatingAdmissionPolicy")
    ascend = by_kind(rendered, "ValidatingAdmissionPolicy")
    assert ascend["metadata"]["name"] != base["metadata"]["name"]
    expected = base["spec"]
    expected["matchConditions"][0]["expression"] = f"request.userInfo.username == '{SA}'"
    for i in (1, 2):  # ownLabels, ownAnnotations
        expected["variables"][i] = ascend["spec"]["variables"][i]
    assert ascend["spec"] == expected


def test_policy_scope_excludes_groupid(rendered: list[dict[str, Any]]) -> None:
    policy = by_kind(rendered, "ValidatingAdmissionPolicy")
    keys = next(v for v in policy["spec"]["variables"] if v["name"] == "ownLabels")["expression"]
    assert "huawei.com/topotree.superpodid" in keys and "groupid" not in keys
    binding = by_kind(rendered, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    sa = by_kind(rendered, "ServiceAccount")["metadata"]
    cond = policy["spec"]["matchConditions"][0]["expression"]
    assert f"system:serviceaccount:{sa['namespace']}:{sa['name']}" in cond


@pytest.fixture(scope="module")
def policy(rendered: list[dict[str, Any]]) -> Policy:
    return Policy(by_kind(rendered, "ValidatingAdmissionPolicy"), user=SA)


def test_policy_names_exactly_the_profile_keys_and_the_agents_annotations(
    policy: Policy,
) -> None:
    act = {"request": celpy.json_to_cel({}), "object": celpy.json_to_cel({})}
    values = dict(policy.variables)
    # Every key of the profile but the group ID, which the LLD sheet owns.
    agent_keys = set(ascend_superpod().all_keys) - {ASCEND_GROUP}
    assert sorted(values["ownLabels"].evaluate(act)) == sorted(agent_keys)
    assert sorted(values["ownAnnotations"].evaluate(act)) == sorted(
        [OWNED_ANNOTATION, OWNERS_ANNOTATION, SOURCE_IDS_ANNOTATION]
    )


BASE = {"kubernetes.io/hostname": "npu-1", "huawei.com/topotree.groupid": "3"}
OWNED = {"topology-labeler.io/owned-labels": "huawei.com/topotree.superpodid"}
# The claim of an equal value: annotations only, the label as it was.
CLAIM = {**OWNED, "topology-labeler.io/owned-by": '{"huawei.com/topotree.superpodid":"agent"}'}


@pytest.mark.parametrize(
    ("new", "claim", "allowed"),
    [
        (
            node("npu-1")
            .labels({**BASE, "huawei.com/topotree.superpodid": "7"})
            .annotations(OWNED)
            .pod_cidr("10.0.0.0/24")
            .obj(),
            "npu-1",
            True,
        ),
        (
            node("npu-1")
            .labels({**BASE, "huawei.com/topotree.superpodid": "7"})
            .annotations(OWNED)
            .pod_cidr("10.0.0.0/24")
            .obj(),
            "npu-2",
            False,
        ),
        (
            node("npu-1")
            .labels({**BASE, "huawei.com/topotree.groupid": "4"})
            .pod_cidr("10.0.0.0/24")
            .obj(),
            "npu-1",
            False,
        ),
        (
            node("npu-1").labels({"kubernetes.io/hostname": "npu-1"}).pod_cidr("10.0.0.0/24").obj(),
            "npu-1",
            False,
        ),  # removes groupid
        (
            node("npu-1")
            .labels(BASE)
            .annotations({"other.io/x": "y"})
            .pod_cidr("10.0.0.0/24")
            .obj(),
            "npu-1",
            False,
        ),
        (
            node("npu-1").labels(BASE).annotations(CLAIM).pod_cidr("10.0.0.0/24").obj(),
            "npu-1",
            True,
        ),
    ],
)
def test_policy_cel_allows_only_own_node_and_agent_keys(
    policy: Policy, new: dict[str, Any], claim: str, allowed: bool
) -> None:
    verdicts = policy.verdicts(
        node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), new, node_name=claim
    )
    assert all(verdicts) is allowed, verdicts


def test_policy_cel_forbids_other_metadata_changes(policy: Policy) -> None:
    new = node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj()
    new["metadata"]["finalizers"] = ["example.com/keep"]
    assert not all(
        policy.verdicts(
            node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), new, node_name="npu-1"
        )
    )


def test_policy_cel_forbids_spec_changes(policy: Policy) -> None:
    new = node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj()
    new["spec"] = {"unschedulable": True}
    assert not all(
        policy.verdicts(
            node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), new, node_name="npu-1"
        )
    )


# --- the readiness gate (agent --remove-taint, --set-condition) ----------------------------


@pytest.mark.parametrize(("old", "new"), GATE_REMOVALS)
def test_policy_allows_removing_only_the_gate_taint(
    policy: Policy, old: tuple[dict[str, str], ...], new: tuple[dict[str, str], ...]
) -> None:
    before, after = (
        tainted(node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), *old),
        tainted(node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), *new),
    )
    assert policy.admit(before, after, node_name="npu-1") == []
    # ... on its own node only
    assert policy.admit(before, after, node_name="npu-2")


@pytest.mark.parametrize(("old", "new", "spec"), OTHER_SPEC_CHANGES)
def test_policy_denies_any_other_taint_or_spec_change(
    policy: Policy,
    old: tuple[dict[str, str], ...],
    new: tuple[dict[str, str], ...],
    spec: dict[str, Any],
) -> None:
    before, after = (
        tainted(node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), *old),
        tainted(node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), *new, **spec),
    )
    assert policy.admit(before, after, node_name="npu-1") == [SPEC_DENIED]


@pytest.mark.parametrize(("old", "new", "cpu", "allowed"), STATUS_WRITES)
def test_policy_allows_on_status_only_the_topology_condition(
    rendered: list[dict[str, Any]],
    old: tuple[dict[str, str], ...],
    new: tuple[dict[str, str], ...],
    cpu: str,
    allowed: bool,
) -> None:
    status = status_policy(by_kind(rendered, "ValidatingAdmissionPolicy"), user=SA)
    before, after = (
        with_status(node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), *old),
        with_status(node("npu-1").labels(BASE).pod_cidr("10.0.0.0/24").obj(), *new, cpu=cpu),
    )
    assert status.admit(before, after, node_name="npu-1") == ([] if allowed else [STATUS_DENIED])
