"""manifests/azure/ renders offline, every object is valid Kubernetes, and it is the base with
only the profile, the nodes and the admission policy's label keys changed."""

from __future__ import annotations

from typing import Any

import pytest

from labeler.profiles import azure
from tests.manifests.helpers import MANIFESTS, Policy, by_kind, render, validate_all

K8S_VERSION = "1.32.0"
SA = "system:serviceaccount:topology-labeler:topology-labeler-agent"


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render(MANIFESTS / "azure")


@pytest.fixture(scope="module")
def base() -> list[dict[str, Any]]:
    return render(MANIFESTS)


def test_every_object_validates(rendered: list[dict[str, Any]]) -> None:
    validate_all(rendered, K8S_VERSION)


def test_the_agent_runs_the_azure_profile_on_hostnetwork(rendered: list[dict[str, Any]]) -> None:
    pod = by_kind(rendered, "DaemonSet")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][:2] == ["agent", "--profile=azure"]
    # IMDS answers the VM itself, at 169.254.169.254.
    assert pod["hostNetwork"] is True
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    types = next(
        e["values"]
        for t in terms["nodeSelectorTerms"]
        for e in t["matchExpressions"]
        if e["key"] == "node.kubernetes.io/instance-type"
    )
    assert "Standard_ND128isr_GB300_v6" in types


def test_only_the_profile_nodes_and_label_keys_differ_from_the_base(
    rendered: list[dict[str, Any]], base: list[dict[str, Any]]
) -> None:
    assert sorted(d["kind"] for d in rendered) == sorted(d["kind"] for d in base)
    ds, base_ds = by_kind(rendered, "DaemonSet"), by_kind(base, "DaemonSet")
    pod, base_pod = ds["spec"]["template"]["spec"], base_ds["spec"]["template"]["spec"]
    assert pod["securityContext"] == base_pod["securityContext"]
    assert pod["containers"][0]["securityContext"] == base_pod["containers"][0]["securityContext"]
    assert by_kind(rendered, "ClusterRole") == by_kind(base, "ClusterRole")


def test_the_policy_allows_exactly_the_azure_keys(rendered: list[dict[str, Any]]) -> None:
    import celpy

    policy = Policy(by_kind(rendered, "ValidatingAdmissionPolicy"), user=SA)
    act = {"request": celpy.json_to_cel({}), "object": celpy.json_to_cel({})}
    own = dict(policy.variables)["ownLabels"].evaluate(act)
    assert sorted(own) == sorted(azure().all_keys)
