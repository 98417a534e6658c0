"""The agent's manifests: render offline, validate every object, run the policy's CEL.

The ValidatingAdmissionPolicy is evaluated the way the API server does it — variables in
order, then every validation — with cel-python, on allowed and denied node updates.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from labeler.core.node import (
    OWNED_ANNOTATION,
    OWNED_ANNOTATIONS_ANNOTATION,
    OWNERS_ANNOTATION,
    SLINKY_ANNOTATION,
    SOURCE_IDS_ANNOTATION,
)
from labeler.core.profiles import oci_rdma
from tests.builders import node
from tests.manifests.helpers import (
    GATE_REMOVALS,
    LABELED,
    MANIFESTS,
    OTHER_SPEC_CHANGES,
    READY,
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

SA = "system:serviceaccount:topology-labeler:topology-labeler-agent"
K8S_VERSIONS = ("1.30.0", "1.33.0")


def raw_documents(folder: Path = MANIFESTS / "base") -> list[dict[str, Any]]:
    """The base's files as written (kustomize only adds labels and the image); a resource
    that is a folder (the admission policy's) is read the same way."""
    kz = yaml.safe_load((folder / "kustomization.yaml").read_text())
    docs: list[dict[str, Any]] = []
    for name in kz["resources"]:
        path = folder / name
        if path.is_dir():
            docs += raw_documents(path)
        else:
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render(MANIFESTS)


def test_kustomize_renders_every_resource(rendered: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in rendered)
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "DaemonSet",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ]
    )
    ds = by_kind(rendered, "DaemonSet")
    image = ds["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith(":0.1.0")


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_rendered_object_validates_against_the_kubernetes_schema(
    rendered: list[dict[str, Any]], version: str
) -> None:
    validate_all(rendered, version)


def test_rbac_is_least_privilege() -> None:
    role = by_kind(raw_documents(), "ClusterRole")
    rules = {tuple(r["resources"]): sorted(r["verbs"]) for r in role["rules"]}
    assert rules == {
        ("nodes",): ["get", "list", "patch", "watch"],
        ("nodes/status",): ["patch"],  # agent --set-condition, narrowed by the policy
        ("events",): ["create"],
    }


def test_daemonset_runs_as_designed() -> None:
    ds = by_kind(raw_documents(), "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert (
        pod["serviceAccountName"] == by_kind(raw_documents(), "ServiceAccount")["metadata"]["name"]
    )
    env = {e["name"]: e for e in c["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    sc = c["securityContext"]
    assert sc["runAsUser"] == 65532 and sc["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    assert c["resources"]["requests"] and c["resources"]["limits"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    port = c["ports"][0]["containerPort"]
    assert f"--port={port}" in c["args"] and c["args"][0] == "agent"
    assert pod["tolerations"] and pod["affinity"]["nodeAffinity"]


def test_the_args_parse_with_the_real_cli() -> None:
    from labeler.cli import build_parser

    c = by_kind(raw_documents(), "DaemonSet")["spec"]["template"]["spec"]["containers"][0]
    args = build_parser().parse_args(c["args"])
    assert args.command == "agent" and args.profile == "oci-rdma"


# --- the admission policy, evaluated -----------------------------------------------------


OCI = oci_rdma()
LOCAL = OCI.level_keys[-1]


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy(by_kind(raw_documents(), "ValidatingAdmissionPolicy"), user=SA)


def test_policy_matches_node_updates_only(policy: Policy) -> None:
    assert policy.rules == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["nodes", "nodes/status"],
        }
    ]
    binding = by_kind(raw_documents(), "ValidatingAdmissionPolicyBinding")
    assert (
        binding["spec"]["policyName"]
        == by_kind(raw_documents(), "ValidatingAdmissionPolicy")["metadata"]["name"]
    )
    assert binding["spec"]["validationActions"] == ["Deny"]


def test_policy_names_exactly_the_profile_keys_and_our_annotations(policy: Policy) -> None:
    act = {"request": celpy.json_to_cel({}), "object": celpy.json_to_cel({})}
    values = dict(policy.variables)
    assert sorted(values["ownLabels"].evaluate(act)) == sorted(OCI.all_keys)
    assert sorted(values["ownAnnotations"].evaluate(act)) == sorted(
        [
            OWNED_ANNOTATION,
            OWNERS_ANNOTATION,
            SOURCE_IDS_ANNOTATION,
            OWNED_ANNOTATIONS_ANNOTATION,
            SLINKY_ANNOTATION,  # agent --slinky-topology
        ]
    )


def test_own_node_own_labels_and_annotations_are_allowed(policy: Policy) -> None:
    new = (
        node("n1")
        .hostname()
        .labels({LOCAL: "abc"})
        .annotations(
            {
                OWNED_ANNOTATION: LOCAL,
                OWNERS_ANNOTATION: '{"x":"agent"}',
                SOURCE_IDS_ANNOTATION: "{}",
            }
        )
        .pod_cidr("x")
        .obj()
    )
    assert policy.admit(node("n1").hostname().pod_cidr("x").obj(), new) == []
    # changing and removing an own key too
    assert policy.admit(new, node("n1").hostname().labels({LOCAL: "def"}).pod_cidr("x").obj()) == []
    assert policy.admit(new, node("n1").hostname().pod_cidr("x").obj()) == []


def test_another_node_is_denied(policy: Policy) -> None:
    failed = policy.admit(
        node("n2").hostname().pod_cidr("x").obj(),
        node("n2").hostname().labels({LOCAL: "abc"}).pod_cidr("x").obj(),
        node_name="n1",
    )
    assert failed == ["the topology-labeler agent may change only the node it runs on (n1), not n2"]


def test_a_token_without_a_node_binding_is_denied(policy: Policy) -> None:
    failed = policy.admit(
        node("n1").hostname().pod_cidr("x").obj(),
        node("n1").hostname().labels({LOCAL: "abc"}).pod_cidr("x").obj(),
        node_name=None,
    )
    assert failed and "the token is not bound to a node" in failed[0]


@pytest.mark.parametrize(
    ("old_labels", "new_labels"),
    [
        ({}, {"team": "a"}),  # add a foreign key
        ({"team": "a"}, {"team": "b"}),  # change one
        ({"team": "a"}, {}),  # remove one
        ({}, {"node-role.kubernetes.io/control-plane": ""}),
    ],
)
def test_a_foreign_label_change_is_denied(
    policy: Policy, old_labels: dict[str, str], new_labels: dict[str, str]
) -> None:
    failed = policy.admit(
        node("n1").hostname().labels(old_labels).pod_cidr("x").obj(),
        node("n1").hostname().labels({**new_labels, LOCAL: "x"}).pod_cidr("x").obj(),
    )
    assert failed == [
        "the topology-labeler agent may add, change or remove only its own label keys"
    ]


def test_a_foreign_annotation_change_is_denied(policy: Policy) -> None:
    failed = policy.admit(
        node("n1").hostname().pod_cidr("x").obj(),
        node("n1").hostname().annotations({"example.com/x": "1"}).pod_cidr("x").obj(),
    )
    assert failed == ["the topology-labeler agent may change only its own annotations"]
    assert policy.admit(
        node("n1").hostname().annotations({"example.com/x": "1"}).pod_cidr("x").obj(),
        node("n1").hostname().pod_cidr("x").obj(),
    )


def test_a_spec_change_is_denied(policy: Policy) -> None:
    new = node("n1").hostname().pod_cidr("x").obj()
    new["spec"] = {"podCIDR": "x", "unschedulable": True}
    assert policy.admit(node("n1").hostname().pod_cidr("x").obj(), new) == [SPEC_DENIED]


def test_other_users_are_not_matched(policy: Policy) -> None:
    assert (
        policy.admit(
            node("n2").hostname().pod_cidr("x").obj(),
            node("n2").hostname().labels({"team": "a"}).pod_cidr("x").obj(),
            user="admin",
        )
        == []
    )


@pytest.mark.parametrize(
    "change",
    [
        {"ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "1"}]},
        {"finalizers": ["example.com/keep"]},
        {"generateName": "gpu-"},
    ],
)
def test_other_metadata_changes_are_denied(policy: Policy, change: dict[str, Any]) -> None:
    new = node("n1").hostname().labels({LOCAL: "abc"}).pod_cidr("x").obj()
    new["metadata"].update(change)
    failed = policy.admit(node("n1").hostname().pod_cidr("x").obj(), new)
    assert len(failed) == 1 and "ownerReferences, finalizers" in failed[0]
    # ... and an agent write that leaves them as they are is still allowed
    old = node("n1").hostname().pod_cidr("x").obj()
    old["metadata"].update(change)
    assert policy.admit(old, new) == []


# --- where the DaemonSet runs --------------------------------------------------------------


def schedulable_on(pod: dict[str, Any], labels: dict[str, str]) -> bool:
    """Required node affinity as the scheduler reads it: terms ORed, expressions ANDed."""

    def matches(expr: dict[str, Any]) -> bool:
        value = labels.get(expr["key"])
        if expr["operator"] == "Exists":
            return value is not None
        assert expr["operator"] == "In", expr
        return value in expr["values"]

    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return any(all(matches(e) for e in t["matchExpressions"]) for t in terms["nodeSelectorTerms"])


@pytest.mark.parametrize(
    "labels",
    [
        {"nvidia.com/gpu": "true"},  # OKE's label on every NVIDIA GPU node
        {"amd.com/gpu": "true"},  # ... and on AMD GPU nodes
        {"nvidia.com/gpu.present": "true"},  # the NVIDIA GPU operator's
        *(
            {"node.kubernetes.io/instance-type": shape}
            for shape in (
                "BM.GPU.B300.8",
                "BM.GPU.GB200-v2.4",
                "BM.GPU.GB200-v3.4",
                "BM.GPU.GB300.4",
                "BM.GPU.MI355X.8",
                "BM.GPU.MI355X-v1.8",
                "BM.GPU.RTXPRO.8",
                "BM.GPU.H100.8",
                "BM.HPC.E5.144",
            )
        ),
    ],
)
def test_the_agent_reaches_every_gpu_and_rdma_node(labels: dict[str, str]) -> None:
    pod = by_kind(raw_documents(), "DaemonSet")["spec"]["template"]["spec"]
    assert schedulable_on(pod, labels)


def test_the_agent_stays_off_plain_cpu_nodes() -> None:
    pod = by_kind(raw_documents(), "DaemonSet")["spec"]["template"]["spec"]
    assert not schedulable_on(pod, {"node.kubernetes.io/instance-type": "VM.Standard.E5.Flex"})


@pytest.mark.parametrize("kustomization", ["", "ascend", "gce", "azure"])
def test_node_agents_are_not_evicted_before_user_pods(kustomization: str) -> None:
    pod = by_kind(render(MANIFESTS / kustomization), "DaemonSet")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-node-critical"


# --- the image the manifests deploy --------------------------------------------------------

ROOT = MANIFESTS.parent


def test_the_image_runs_the_python_the_tests_run_on() -> None:
    (image_python,) = set(re.findall(r"^FROM python:(\d+\.\d+)", dockerfile(), re.M))
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert image_python == here, f"the tests run on Python {here}, the image on {image_python}"


def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


@pytest.mark.parametrize("kustomization", ["", "ascend", "audit", "gce", "azure"])
def test_the_manifests_deploy_the_image_the_install_page_builds(kustomization: str) -> None:
    install = (ROOT / "docs" / "install.md").read_text()
    (tag,) = re.findall(r"^docker build -t (\S+) \.", install, re.M)
    images = {
        c["image"]
        for d in render(MANIFESTS / kustomization)
        if d["kind"] in ("DaemonSet", "Deployment")
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert images == {tag}


# --- the readiness gate ----------------------------------------------------------------


@pytest.mark.parametrize(("old", "new"), GATE_REMOVALS)
def test_removing_only_the_gate_taint_is_allowed(
    policy: Policy, old: tuple[dict[str, str], ...], new: tuple[dict[str, str], ...]
) -> None:
    assert (
        policy.admit(
            tainted(node("n1").hostname().pod_cidr("x").obj(), *old),
            tainted(node("n1").hostname().pod_cidr("x").obj(), *new),
        )
        == []
    )


@pytest.mark.parametrize(("old", "new", "spec"), OTHER_SPEC_CHANGES)
def test_any_other_taint_or_spec_change_is_denied(
    policy: Policy,
    old: tuple[dict[str, str], ...],
    new: tuple[dict[str, str], ...],
    spec: dict[str, Any],
) -> None:
    assert policy.admit(
        tainted(node("n1").hostname().pod_cidr("x").obj(), *old),
        tainted(node("n1").hostname().pod_cidr("x").obj(), *new, **spec),
    ) == [SPEC_DENIED]


@pytest.mark.parametrize(("old", "new", "cpu", "allowed"), STATUS_WRITES)
def test_on_status_only_the_topology_condition_may_change(
    old: tuple[dict[str, str], ...], new: tuple[dict[str, str], ...], cpu: str, allowed: bool
) -> None:
    status = status_policy(by_kind(raw_documents(), "ValidatingAdmissionPolicy"), user=SA)
    failed = status.admit(
        with_status(node("n1").hostname().pod_cidr("x").obj(), *old),
        with_status(node("n1").hostname().pod_cidr("x").obj(), *new, cpu=cpu),
    )
    assert failed == ([] if allowed else [STATUS_DENIED])


def test_another_nodes_status_is_denied() -> None:
    status = status_policy(by_kind(raw_documents(), "ValidatingAdmissionPolicy"), user=SA)
    old, new = (
        with_status(node("n1").hostname().pod_cidr("x").obj(), READY),
        with_status(node("n1").hostname().pod_cidr("x").obj(), READY, LABELED),
    )
    other = status.admit(old, new, node_name="n2")
    assert other and "only the node it runs on" in other[0]
