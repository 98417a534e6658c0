"""manifests/audit renders offline, validates against the Kubernetes schemas, and keeps the
promises the manifests make: read-only RBAC, restricted container, probes, the exporter's args,
and an alert that names metrics the exporter really publishes."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from labeler.audit.serve import audit_figures
from labeler.base.metrics import (
    AuditCollector,
    HotSwapCollector,
    HotSwapFigures,
    StalenessCollector,
)
from labeler.core.profiles import oci_rdma
from labeler.core.states import build_report
from tests.manifests.helpers import MANIFESTS, by_kind, render, validate_all
from tests.manifests.test_grafana import exported

AUDIT = MANIFESTS / "audit"


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render(AUDIT)


def test_every_rendered_object_validates(rendered: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in rendered)
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Service",
        "ServiceAccount",
    ]
    validate_all(rendered, "1.30")


def test_rbac_is_list_and_watch_of_nodes_resourceslices_and_kueues_objects_only(
    rendered: list[dict[str, Any]],
) -> None:
    role = by_kind(rendered, "ClusterRole")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices"],
            "verbs": ["list", "watch"],
        },
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads", "topologies", "resourceflavors"],
            "verbs": ["list", "watch"],
        },
    ]
    binding = by_kind(rendered, "ClusterRoleBinding")
    sa = by_kind(rendered, "ServiceAccount")
    [subject] = binding["subjects"]
    assert (subject["name"], subject["namespace"]) == (
        sa["metadata"]["name"],
        sa["metadata"]["namespace"],
    )
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_deployment_is_restricted_probed_and_runs_the_exporter(
    rendered: list[dict[str, Any]],
) -> None:
    dep = by_kind(rendered, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == by_kind(rendered, "ServiceAccount")["metadata"]["name"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    [c] = pod["containers"]
    sc = c["securityContext"]
    assert sc["runAsUser"] == 65532 and sc["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    assert c["args"][:2] == ["audit", "--serve"]
    assert c["image"].startswith("ghcr.io/topology-labeler/topology-labeler:")
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # The args parse with the real CLI (a typo in a flag would crash-loop the pod).
    from labeler.cli import build_parser

    args = build_parser().parse_args(c["args"])
    assert args.serve and args.port == c["ports"][0]["containerPort"]
    svc = by_kind(rendered, "Service")
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()


def test_prometheus_rule_is_separate_and_names_published_metrics() -> None:
    kustomization = yaml.safe_load((AUDIT / "kustomization.yaml").read_text())
    assert "prometheusrule.yaml" not in kustomization["resources"]
    rule = yaml.safe_load((AUDIT / "prometheusrule.yaml").read_text())
    assert rule["kind"] == "PrometheusRule"
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    invisible = alerts["TopologyLabelerNodesInvisible"]
    assert invisible["for"] == "10m"
    assert "GPU nodes invisible to topology-aware scheduling for 10 minutes" in str(
        invisible["annotations"]["summary"]
    )
    # Every metric an alert uses is one the exporter publishes (its collectors' gauges and
    # its watches' counters).
    prof = oci_rdma()
    fig = audit_figures(build_report(prof.name, "x", prof.topology, []), 1.0)
    published = {m.name for m in AuditCollector(prof.name, lambda: fig).collect()}
    hot = HotSwapFigures({"gpu": {"not_replaceable": 1}}, 1, 1.0, True)
    published |= {m.name for m in HotSwapCollector(lambda: hot).collect()}
    published |= {m.name for m in StalenessCollector(lambda: [("nodes", "", 0.0)]).collect()}
    published |= {name for name in exported() if name.endswith("watch_errors_total")}
    for alert in alerts.values():
        used = {w for w in _words(alert["expr"]) if w.startswith("topology_labeler_")}
        assert used and used <= published, (alert["alert"], used - published)


def _words(expr: str) -> list[str]:
    return re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr)
