"""The chart renders, for every profile, exactly the objects its kustomization renders (apart
from Helm's own labels and the Namespace, which `helm install --create-namespace` makes), so
the two ways to install cannot drift apart; and each value changes what it says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from labeler.core.profiles import parse_profile
from tests.builders import node
from tests.helm.helpers import (
    KUSTOMIZATIONS,
    MANIFESTS,
    NAMESPACE,
    Helm,
    by_id,
    differences,
    kustomize,
    objects,
    one,
    without_helm_labels,
)
from tests.manifests.helpers import SPEC_DENIED, Policy

# What the chart leaves out of an agent-only or exporter-only rendering.
NO_AUDIT = ("--set", "audit.enabled=false", "--set", "grafanaDashboard.enabled=false")
NO_AGENT = ("--set", "agent.enabled=false")


def _compare(chart: list[dict[str, Any]], kustomized: list[dict[str, Any]]) -> None:
    ours = by_id([without_helm_labels(d) for d in chart])
    theirs = by_id([d for d in kustomized if d["kind"] != "Namespace"])
    assert sorted(ours) == sorted(theirs)
    for key, doc in theirs.items():
        assert differences(ours[key], doc) == [], f"{key} differs from its kustomize rendering"


@pytest.mark.parametrize("profile", sorted(KUSTOMIZATIONS))
def test_each_profile_renders_what_its_kustomization_renders(
    profile: str, helm: Helm, kubectl_bin: Path
) -> None:
    chart = objects(helm.template("--set", f"profile={profile}", *NO_AUDIT))
    _compare(chart, kustomize(kubectl_bin, KUSTOMIZATIONS[profile]))


def test_the_exporter_renders_what_manifests_audit_renders(helm: Helm, kubectl_bin: Path) -> None:
    chart = objects(helm.template(*NO_AGENT, "--set", "prometheusRule.enabled=true"))
    rule = yaml.safe_load((MANIFESTS / "audit" / "prometheusrule.yaml").read_text())
    rule["metadata"]["namespace"] = NAMESPACE  # applied with -n topology-labeler
    _compare(chart, [*kustomize(kubectl_bin, MANIFESTS / "audit"), rule])


def test_every_object_has_helms_labels_and_names_its_release(helm: Helm) -> None:
    docs = objects(helm.template("--set", "prometheusRule.enabled=true"))
    assert len(docs) == 13
    for doc in docs:
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "Helm", doc["kind"]
        assert labels["app.kubernetes.io/instance"] == "topology-labeler"
        assert labels["helm.sh/chart"] == "topology-labeler-0.1.0"


def test_another_release_name_prefixes_every_name_and_the_policy_follows(helm: Helm) -> None:
    docs = objects(helm.template(release="gpu", namespace="infra"))
    names = {d["metadata"]["name"] for d in docs}
    assert names == {
        "gpu-topology-labeler-agent",
        "gpu-topology-labeler-audit",
        "gpu-topology-labeler-grafana-dashboard",
    }
    policy = one(docs, "ValidatingAdmissionPolicy")
    assert policy["spec"]["matchConditions"][0]["expression"] == (
        "request.userInfo.username == 'system:serviceaccount:infra:gpu-topology-labeler-agent'"
    )
    assert one(docs, "ValidatingAdmissionPolicyBinding")["spec"]["policyName"] == (
        "gpu-topology-labeler-agent"
    )
    (binding,) = [
        d
        for d in docs
        if d["metadata"]["name"] == "gpu-topology-labeler-agent"
        and d["kind"] == "ClusterRoleBinding"
    ]
    (subject,) = binding["subjects"]
    assert subject == {
        "kind": "ServiceAccount",
        "name": "gpu-topology-labeler-agent",
        "namespace": "infra",
    }


def _agent(docs: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = one(docs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]
    return container


def test_agent_values_reach_its_command_line_pod_and_policy(helm: Helm) -> None:
    docs = objects(
        helm.template(
            "--set-json", "agent.interval=90.5",
            "--set", "agent.readinessGate.removeTaint=true",
            "--set", "agent.readinessGate.taint=example.com/gate",
            "--set", "agent.readinessGate.setCondition=true",
            "--set", "agent.extraArgs={--adopt}",
            "--set", "agent.priorityClassName=gpu-agents",
            "--set", "image.repository=registry.example.com:5000/tl",
            "--set", "image.tag=0.1.0-rc1",
            "--set", "imagePullSecrets={pull}",
        )
    )  # fmt: skip
    container = _agent(docs)
    assert container["args"][-5:] == [
        "--port=9716",
        "--interval=90.5",
        "--remove-taint=example.com/gate",
        "--set-condition",
        "--adopt",
    ]
    assert container["image"] == "registry.example.com:5000/tl:0.1.0-rc1"
    pod = one(docs, "DaemonSet")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "gpu-agents"
    assert pod["imagePullSecrets"] == [{"name": "pull"}]
    audit = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert audit["containers"][0]["image"] == container["image"]
    # The policy lets the agent remove that taint, and no longer the default one.
    policy = Policy(
        one(docs, "ValidatingAdmissionPolicy"),
        user="system:serviceaccount:topology-labeler:topology-labeler-agent",
    )
    gate = {"key": "example.com/gate", "effect": "NoSchedule"}
    default = {"key": "topology-labeler.io/not-ready", "effect": "NoSchedule"}
    assert policy.admit(node("n1").taints([gate]).obj(), node("n1").taints([]).obj()) == []
    assert policy.admit(node("n1").taints([default]).obj(), node("n1").taints([]).obj()) == [
        SPEC_DENIED
    ]


def test_exporter_values_reach_its_deployment(helm: Helm) -> None:
    docs = objects(
        helm.template(
            "--set", "profile=ascend",
            "--set", "audit.extraArgs={--dra-driver=none}",
            "--set", "audit.resources.limits.memory=1Gi",
        )
    )  # fmt: skip
    (container,) = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["args"] == [
        "audit",
        "--serve",
        "--profile=ascend-superpod",
        "--port=8080",
        "--log-format=json",
        "--dra-driver=none",
    ]
    assert container["resources"]["limits"] == {"memory": "1Gi"}
    kinds = [d["kind"] for d in objects(helm.template("--set", "audit.enabled=false"))]
    assert "Deployment" not in kinds and "Service" not in kinds


def test_a_digest_pins_the_image(helm: Helm) -> None:
    digest = "sha256:" + "ab" * 32
    docs = objects(helm.template("--set", f"image.digest={digest}"))
    assert _agent(docs)["image"] == f"ghcr.io/topology-labeler/topology-labeler@{digest}"


def test_the_nodes_tolerations_and_resources_of_a_profile_are_values(helm: Helm) -> None:
    docs = objects(
        helm.template(
            "--set", "profile=gce",
            "--set", "profiles.gce.nodeSelectorTerms[0].matchExpressions[0].key=pool",
            "--set", "profiles.gce.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
            "--set-json", "profiles.gce.tolerations=[]",
            "--set", "profiles.gce.resources.limits.memory=256Mi",
        )
    )  # fmt: skip
    pod = one(docs, "DaemonSet")["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "pool", "operator": "Exists"}]}
    ]
    assert "tolerations" not in pod
    assert pod["containers"][0]["resources"]["limits"] == {"cpu": "200m", "memory": "256Mi"}


def test_a_custom_profile_is_read_from_the_chart_configmap(helm: Helm) -> None:
    example = Path(__file__).resolve().parents[2] / "charts/topology-labeler/examples/custom.yaml"
    docs = objects(helm.template("-f", str(example)))
    (config,) = [d for d in docs if d["metadata"]["name"] == "topology-labeler-profile"]
    file = yaml.safe_load(config["data"]["profile.yaml"])
    wanted = yaml.safe_load(example.read_text())["profiles"]["custom"]["file"]
    assert file == wanted
    profile = parse_profile(file, origin="the chart's ConfigMap")
    keys = [level.key for level in profile.topology.levels]
    path = "/etc/topology-labeler/profile/profile.yaml"
    container = _agent(docs)
    assert container["args"][:2] == ["agent", f"--profile={path}"]
    assert container["volumeMounts"] == [
        {"name": "profile", "mountPath": "/etc/topology-labeler/profile", "readOnly": True}
    ]
    audit = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert f"--profile={path}" in audit["containers"][0]["args"]
    assert audit["volumes"] == one(docs, "DaemonSet")["spec"]["template"]["spec"]["volumes"]
    policy = one(docs, "ValidatingAdmissionPolicy")
    own = dict((v["name"], v["expression"]) for v in policy["spec"]["variables"])["ownLabels"]
    assert _cel_list(own) == keys


def _cel_list(expression: str) -> list[str]:
    env = celpy.Environment()
    return [str(v) for v in env.program(env.compile(expression)).evaluate({})]


def test_a_custom_profile_running_like_ascend_gets_the_ascend_pod(helm: Helm) -> None:
    docs = objects(
        helm.template(
            "--set", "profile=custom",
            "--set", "profiles.custom.runsLike=ascend",
            "--set", "profiles.custom.file.name=npu",
            "--set", "profiles.custom.file.source=ascend",
            "--set", "profiles.custom.file.levels[0].key=example.com/superpod",
            "--set", "profiles.custom.file.levels[0].name=superpod",
            "--set", "profiles.custom.ownLabels={example.com/superpod}",
        )
    )  # fmt: skip
    ds = one(docs, "DaemonSet")
    assert ds["metadata"]["name"] == "topology-labeler-ascend"
    pod = ds["spec"]["template"]["spec"]
    assert "hostNetwork" not in pod
    assert pod["containers"][0]["securityContext"]["privileged"] is True
    assert [v["name"] for v in pod["volumes"]] == [
        "ascend-driver",
        "npu-smi",
        "ascend-dcmi",
        "tmp",
        "profile",
    ]
    policy = one(docs, "ValidatingAdmissionPolicy")
    own = dict((v["name"], v["expression"]) for v in policy["spec"]["variables"])["ownLabels"]
    assert _cel_list(own) == ["example.com/superpod"]


def test_the_monitoring_objects_are_optional(helm: Helm) -> None:
    kinds = [d["kind"] for d in objects(helm.template())]
    assert "ServiceMonitor" not in kinds and "PrometheusRule" not in kinds
    assert kinds.count("ConfigMap") == 1  # the dashboard, on by default
    docs = objects(
        helm.template(
            "--set", "serviceMonitor.enabled=true",
            "--set", "serviceMonitor.interval=30s",
            "--set", "serviceMonitor.labels.release=prom",
            "--set", "grafanaDashboard.enabled=false",
        )
    )  # fmt: skip
    monitor = one(docs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    service = one(docs, "Service")
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "30s"}
    ]
    assert "ConfigMap" not in [d["kind"] for d in docs]
