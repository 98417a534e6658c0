"""manifests/gce/ and manifests/azure/ render offline, every object is valid Kubernetes, and
each is the base with only the profile, the nodes and the admission policy's label keys
changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import celpy
import pytest

from labeler.core.profiles import Profile, azure, gce
from tests.manifests.helpers import MANIFESTS, Policy, by_kind, render, validate_all

K8S_VERSION = "1.32.0"
SA = "system:serviceaccount:topology-labeler:topology-labeler-agent"

# cloud → (its profile, instance types its DaemonSet must reach)
CLOUDS: dict[str, tuple[Callable[[], Profile], tuple[str, ...]]] = {
    "gce": (gce, ("a4x-highgpu-4g", "a3-ultragpu-8g")),
    "azure": (azure, ("Standard_ND128isr_GB300_v6",)),
}


@pytest.fixture(scope="module", params=sorted(CLOUDS))
def cloud(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def rendered(cloud: str) -> list[dict[str, Any]]:
    return render(MANIFESTS / cloud)


@pytest.fixture(scope="module")
def base() -> list[dict[str, Any]]:
    return render(MANIFESTS)


def test_every_object_validates(rendered: list[dict[str, Any]]) -> None:
    validate_all(rendered, K8S_VERSION)


def test_the_agent_runs_the_cloud_profile_on_hostnetwork(
    cloud: str, rendered: list[dict[str, Any]]
) -> None:
    pod = by_kind(rendered, "DaemonSet")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][:2] == ["agent", f"--profile={cloud}"]
    # The metadata service answers the VM itself, at 169.254.169.254.
    assert pod["hostNetwork"] is True
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    types = next(
        e["values"]
        for t in terms["nodeSelectorTerms"]
        for e in t["matchExpressions"]
        if e["key"] == "node.kubernetes.io/instance-type"
    )
    assert set(CLOUDS[cloud][1]) <= set(types)


def test_only_the_profile_nodes_and_label_keys_differ_from_the_base(
    rendered: list[dict[str, Any]], base: list[dict[str, Any]]
) -> None:
    assert sorted(d["kind"] for d in rendered) == sorted(d["kind"] for d in base)
    ds, base_ds = by_kind(rendered, "DaemonSet"), by_kind(base, "DaemonSet")
    pod, base_pod = ds["spec"]["template"]["spec"], base_ds["spec"]["template"]["spec"]
    assert pod["securityContext"] == base_pod["securityContext"]
    assert pod["containers"][0]["securityContext"] == base_pod["containers"][0]["securityContext"]
    assert pod["priorityClassName"] == "system-node-critical"
    assert by_kind(rendered, "ClusterRole") == by_kind(base, "ClusterRole")


def test_the_policy_allows_exactly_the_profile_keys(
    cloud: str, rendered: list[dict[str, Any]]
) -> None:
    policy = Policy(by_kind(rendered, "ValidatingAdmissionPolicy"), user=SA)
    act = {"request": celpy.json_to_cel({}), "object": celpy.json_to_cel({})}
    own = dict(policy.variables)["ownLabels"].evaluate(act)
    assert sorted(own) == sorted(CLOUDS[cloud][0]().all_keys)
