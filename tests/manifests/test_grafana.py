"""The Grafana dashboard: every query names only metrics the project exports, with their
real label names, and the ConfigMap carries it for Grafana's dashboard sidecar."""

from __future__ import annotations

import json
import re
from typing import Any

from prometheus_client import CollectorRegistry

from labeler.base.metrics import (
    AuditFigures,
    HotSwapFigures,
    agent_metrics,
    audit_metrics,
    hotswap_metrics,
)
from tests.manifests.helpers import MANIFESTS, by_kind, render

DASHBOARD = MANIFESTS / "audit" / "grafana-dashboard.json"
# Labels Prometheus adds to every scraped series, and the histogram bucket bound.
SCRAPE_LABELS = {"job", "instance", "namespace", "pod", "node", "service", "container"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}


def exported() -> dict[str, set[str]]:
    """Every sample name the agent and the exporter publish -> its label names."""
    registry = CollectorRegistry()
    agent = agent_metrics(registry)
    agent.source_reads.labels("oci-imds", "reading").inc()
    agent.source_read_duration.labels("oci-imds").observe(0.1)
    agent.label_writes.labels("success").inc()
    agent.label_conflicts.inc()
    agent.node_labeled.set(1)
    agent.last_success.set(1)
    figures = AuditFigures(
        states={"labeled": 1},
        unlabeled_accelerators={"nvidia.com/gpu": 8},
        nesting_violations={"local_block": 0},
        domains={"local_block": 1},
        foreign_nodes=0,
        last_sync=1.0,
    )
    audit_registry = CollectorRegistry()
    counters = audit_metrics(audit_registry, "oci-rdma", lambda: figures)
    counters.relists.inc()
    counters.errors.labels("Expired").inc()
    hot = HotSwapFigures({"gpu": {"replaceable": 1}}, at_risk_nodes=0, computed=1.0, kueue=True)
    hotswap_metrics(audit_registry, lambda: hot).labels("Expired").inc()
    out: dict[str, set[str]] = {}
    for reg in (registry, audit_registry):
        for family in reg.collect():
            for sample in family.samples:
                out.setdefault(sample.name, set()).update(sample.labels)
    return out


def queries(doc: Any) -> list[str]:
    """Every PromQL expression in the dashboard: panel targets and variable queries."""
    found: list[str] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ("expr", "definition") and isinstance(value, str):
                found.append(value)
            elif key == "query" and isinstance(value, dict) and "query" in value:
                found.append(value["query"])
            else:
                found += queries(value)
    elif isinstance(doc, list):
        for item in doc:
            found += queries(item)
    return found


def label_names(expr: str) -> set[str]:
    """Label names a query uses: in matchers, by/without/on/ignoring, label_values()."""
    names: set[str] = set()
    for body in re.findall(r"\{([^}]*)\}", expr):
        names |= set(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", body))
    for body in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        names |= {n.strip() for n in body.split(",") if n.strip()}
    names |= set(re.findall(r"label_values\(\s*\w+\s*,\s*(\w+)\s*\)", expr))
    return names


def test_every_query_names_exported_metrics_with_real_labels() -> None:
    metrics = exported()
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = queries(dashboard)
    assert len(exprs) >= 15
    used: set[str] = set()
    for expr in exprs:
        # Grafana variables are not PromQL; the metric names are.
        names = set(re.findall(r"\btopology_labeler_\w+", expr))
        assert names, f"query names no topology_labeler metric: {expr}"
        unknown = names - set(metrics)
        assert not unknown, f"{expr}: not exported: {sorted(unknown)}"
        allowed = set().union(*(metrics[n] for n in names)) | SCRAPE_LABELS
        wrong = label_names(expr) - allowed
        assert not wrong, f"{expr}: no such label on {sorted(names)}: {sorted(wrong)}"
        used |= names
    # The views are all there: states, invisible accelerators, domains, nesting,
    # agent writes and conflicts, time since the last successful read (exporter and agent).
    for needed in (
        "topology_labeler_nodes",
        "topology_labeler_unlabeled_accelerators",
        "topology_labeler_domains",
        "topology_labeler_nesting_violations",
        "topology_labeler_label_writes_total",
        "topology_labeler_label_conflicts_total",
        "topology_labeler_audit_last_sync_timestamp_seconds",
        "topology_labeler_last_success_timestamp_seconds",
        "topology_labeler_hotswap_workloads",
        "topology_labeler_hotswap_at_risk_nodes",
    ):
        assert needed in used, needed


def test_label_names_are_parsed() -> None:
    # The parser above must see labels, or the test above could not fail.
    expr = 'sum by (state, x) (m{profile=~"$p", y!="1"}) + label_values(m, z)'
    assert label_names(expr) == {"state", "x", "profile", "y", "z"}


def test_configmap_carries_the_dashboard_for_the_sidecar() -> None:
    rendered = render(MANIFESTS / "audit")
    cm = by_kind(rendered, "ConfigMap")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["grafana-dashboard.json"]) == json.loads(DASHBOARD.read_text())
    panels = [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in panels}) == len(panels)
