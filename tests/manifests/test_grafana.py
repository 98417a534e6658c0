"""The Grafana dashboard: every query names only metrics the project exports, with their
real label names; every metric is charted where docs/audit.md's table says, or deliberately not;
and the ConfigMap carries the dashboard for Grafana's dashboard sidecar."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from labeler.base.metrics import (
    AuditFigures,
    HotSwapFigures,
    agent_metrics,
    audit_metrics,
    hotswap_metrics,
    slice_watch_errors,
    watch_staleness,
)
from tests.manifests.helpers import MANIFESTS, ROOT, by_kind, render

DASHBOARD = MANIFESTS / "audit" / "grafana-dashboard.json"
# Labels Prometheus adds to every scraped series, and the histogram bucket bound.
SCRAPE_LABELS = {"job", "instance", "namespace", "pod", "node", "service", "container"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}


def families() -> dict[str, tuple[set[str], set[str]]]:
    """Every metric the agent and the exporter publish, by the name one queries it by
    (counters with ``_total``), -> (its label names, its sample names)."""
    registry = CollectorRegistry()
    agent = agent_metrics(registry)
    agent.source_reads.labels("oci-imds", "reading").inc()
    agent.source_read_duration.labels("oci-imds").observe(0.1)
    agent.unconfirmed_reads.labels("oci-imds").inc()
    agent.label_writes.labels("success").inc()
    agent.label_conflicts.inc()
    agent.node_labeled.set(1)
    agent.last_success.set(1)
    agent.thread_errors.labels("source").inc()
    agent.label_unknown.labels("nvidia.com/gpu.clique", "fabric-pending").set(1)
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
    counters.errors.labels("expired").inc()
    slice_watch_errors(audit_registry).labels("gpu.nvidia.com", "Forbidden").inc()
    hot = HotSwapFigures({"gpu": {"replaceable": 1}}, at_risk_nodes=0, computed=1.0, kueue=True)
    hotswap_metrics(audit_registry, lambda: hot).labels("expired").inc()
    watch_staleness(audit_registry, lambda: [("nodes", "", 0.0)])
    out: dict[str, tuple[set[str], set[str]]] = {}
    for reg in (registry, audit_registry):
        for family in reg.collect():
            name = family.name + {"counter": "_total", "info": "_info"}.get(family.type, "")
            labels, samples = out.setdefault(name, (set(), set()))
            for sample in family.samples:
                if not sample.name.endswith("_created"):  # the client library's bookkeeping
                    labels.update(sample.labels)
                    samples.add(sample.name)
    return out


def exported() -> dict[str, set[str]]:
    """Every sample name the agent and the exporter publish -> its label names."""
    return {s: labels for labels, samples in families().values() for s in samples}


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
    for expr in exprs:
        # Grafana variables are not PromQL; the metric names are.
        names = set(re.findall(r"\btopology_labeler_\w+", expr))
        assert names, f"query names no topology_labeler metric: {expr}"
        unknown = names - set(metrics)
        assert not unknown, f"{expr}: not exported: {sorted(unknown)}"
        allowed = set().union(*(metrics[n] for n in names)) | SCRAPE_LABELS
        wrong = label_names(expr) - allowed
        assert not wrong, f"{expr}: no such label on {sorted(names)}: {sorted(wrong)}"


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


def metrics_table() -> dict[str, tuple[set[str], str]]:
    """docs/audit.md's table of metrics: metric -> (the label names it shows, its last cell)."""
    text = (ROOT / "docs" / "audit.md").read_text()
    start = text.index("| metric | from | what it says | panel or alert |")
    rows: dict[str, tuple[set[str], str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        name, _, labels = cells[0].strip("`").partition("{")
        rows[name] = ({n for n in labels.rstrip("}").split(",") if n}, cells[-1])
    return rows


def test_the_audit_page_table_names_every_metric_and_where_it_is_charted() -> None:
    """Every metric published is in docs/audit.md's table with its labels; each is charted in the
    panels the table names (and alerted on by the alerts it names), or the table says why
    not and the dashboard does not chart it."""
    published = families()
    table = metrics_table()
    assert set(table) == set(published)
    dashboard = json.loads(DASHBOARD.read_text())
    panels = {p["title"]: queries(p) for p in dashboard["panels"] if p["type"] != "row"}
    rules = yaml.safe_load((MANIFESTS / "audit" / "prometheusrule.yaml").read_text())
    alerts = {r["alert"]: r["expr"] for g in rules["spec"]["groups"] for r in g["rules"]}

    def uses(exprs: list[str], samples: set[str]) -> bool:
        return any(set(re.findall(r"\btopology_labeler_\w+", e)) & samples for e in exprs)

    for name, (labels, cell) in table.items():
        shown, samples = published[name]
        shown = shown - {"le"}  # a histogram's bucket bound
        assert labels == shown, f"{name}: the table says {sorted(labels)}, it has {sorted(shown)}"
        charted = uses([e for exprs in panels.values() for e in exprs], samples)
        if cell.startswith("not charted: "):
            assert not charted, f"{name}: the table says not charted, the dashboard charts it"
            continue
        titles = re.findall(r'"([^"]+)"', cell)
        assert titles, f"{name}: the table names no panel and no reason"
        for title in titles:
            assert title in panels, f"{name}: no panel {title!r}"
            assert uses(panels[title], samples), f"panel {title!r} does not chart {name}"
        for alert in re.findall(r"`(TopologyLabeler\w+)`", cell):
            assert uses([alerts[alert]], samples), f"alert {alert} does not use {name}"
