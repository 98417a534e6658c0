"""The PrometheusRule's alerts with Prometheus's own rule checker and unit-test runner
(``promtool``, Debian's ``prometheus`` package; .ci/run installs it): the rules parse, the
hot-swap alert fires on a ClusterQueue with an at-risk Workload after 30 minutes, not
before, and not for a replaceable one; the watch alerts fire on errors that go on for 15
minutes, per DRA driver, and never for 410s alone; the staleness alert fires for a watch
down more than a minute for 5 minutes, not for one cut now and then."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.manifests.helpers import MANIFESTS

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    PROMTOOL is None and not os.environ.get("CI"),
    reason="promtool not installed (apt-get install prometheus; .ci/run installs it)",
)

TESTS = """
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'topology_labeler_hotswap_workloads{cluster_queue="gpu",state="not_replaceable"}'
        values: '1x40'
      - series: 'topology_labeler_hotswap_workloads{cluster_queue="cpu",state="not_replaceable"}'
        values: '0x40'
      - series: 'topology_labeler_hotswap_workloads{cluster_queue="cpu",state="replaceable"}'
        values: '3x40'
    alert_rule_test:
      - eval_time: 20m
        alertname: TopologyLabelerNoSpareNode
        exp_alerts: []
      - eval_time: 35m
        alertname: TopologyLabelerNoSpareNode
        exp_alerts:
          - exp_labels: {severity: warning, cluster_queue: gpu}
            exp_annotations:
              summary: Running Kueue Workloads that one node failure would evict
              description: >-
                1 admitted Workload(s) of ClusterQueue gpu have a node with no spare node in
                the domain Kueue would search for its replacement. Free a node there, or see
                `topology-labeler audit` (hot swap) and `topology-labeler advise --workload
                NS/NAME --failed-node NODE`.
  - interval: 1m
    input_series:
      # gpu.nvidia.com's slices: Forbidden on every retry, about one a minute
      - series: 'topology_labeler_audit_resourceslice_watch_errors_total{driver="gpu.nvidia.com",
          error="Forbidden"}'
        values: '0+1x40'
      # another driver: only 410s, each answered by a new LIST
      - series: 'topology_labeler_audit_resourceslice_watch_errors_total{
          driver="neuron.amazonaws.com", error="expired"}'
        values: '0+1x40'
      # Workloads: one failure, then quiet
      - series: 'topology_labeler_hotswap_watch_errors_total{error="Retryable"}'
        values: '0 1x40'
    alert_rule_test:
      - eval_time: 10m
        alertname: TopologyLabelerResourceSliceWatchFailing
        exp_alerts: []
      - eval_time: 30m
        alertname: TopologyLabelerResourceSliceWatchFailing
        exp_alerts:
          - exp_labels: {severity: warning, driver: gpu.nvidia.com}
            exp_annotations:
              summary: The topology audit cannot read DRA ResourceSlices
              description: >-
                The audit exporter's list or watch of the ResourceSlices of driver
                gpu.nvidia.com has failed for 15 minutes, so its counts of nodes whose GPUs
                only DRA publishes may be stale. Check the pod's logs for the failing call;
                grant 'list' and 'watch' on resourceslices, or pass --dra-driver none.
      - eval_time: 30m
        alertname: TopologyLabelerWorkloadWatchFailing
        exp_alerts: []
  - interval: 1m
    input_series:
      # the node watch down from minute 5 on: the gauge counts the seconds
      - series: 'topology_labeler_audit_stale_seconds{resource="nodes",driver=""}'
        values: '0x4 60+60x30'
      # one driver's slices: a cut now and then, open again within seconds
      - series: 'topology_labeler_audit_stale_seconds{
          resource="resourceslices.resource.k8s.io", driver="gpu.nvidia.com"}'
        values: '0 2 0 0 3 0 0x30'
    alert_rule_test:
      - eval_time: 9m
        alertname: TopologyLabelerAuditStale
        exp_alerts: []
      - eval_time: 12m
        alertname: TopologyLabelerAuditStale
        exp_alerts:
          - exp_labels: {severity: warning, resource: nodes}
            exp_annotations:
              summary: The topology audit's figures are stale
              description: >-
                The audit exporter's watch of nodes has been down for 8m 0s, so its figures
                are that old. Check the pod's logs for the failing verb and resource.
  - interval: 1m
    input_series:
      - series: 'topology_labeler_hotswap_watch_errors_total{error="Forbidden"}'
        values: '0+1x40'
    alert_rule_test:
      - eval_time: 30m
        alertname: TopologyLabelerWorkloadWatchFailing
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: The topology audit cannot read Kueue's Workloads
              description: >-
                The audit exporter's list or watch of Kueue's Workloads has failed for 15
                minutes, so its hot-swap view may be stale. Check the pod's logs for the
                failing call, and its RBAC ('list' and 'watch' on workloads, topologies and
                resourceflavors of kueue.x-k8s.io).
"""


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL, "promtool is needed in CI"
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_rules_parse_and_the_alerts_fire_when_they_should(tmp_path: Path) -> None:
    rule = yaml.safe_load((MANIFESTS / "audit" / "prometheusrule.yaml").read_text())
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    checked = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (tmp_path / "tests.yaml").write_text(TESTS)
    tested = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_dashboard_query_is_promql_and_the_watch_panel_adds_up(tmp_path: Path) -> None:
    """Each Grafana query parses as Prometheus parses it (checked as a recording rule, with
    the $profile variable at its "All" value and Grafana's label_values(m, l) as the PromQL
    it stands for), and the watch-errors panel sums each watch's failures by the labels its
    legend names."""
    import json
    import re

    from tests.manifests.test_grafana import DASHBOARD, queries

    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [
        re.sub(r"label_values\((\w+), (\w+)\)", r"group by (\2) (\1)", q.replace("$profile", ".*"))
        for q in queries(dashboard)
    ]
    rules = [{"record": f"dashboard:query{i}", "expr": e} for i, e in enumerate(exprs)]
    (tmp_path / "dashboard.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]})
    )
    checked = promtool("check", "rules", "dashboard.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (watch,) = [
        p for p in dashboard["panels"] if p["title"] == "Exporter watch errors and re-lists"
    ]
    by_legend = {t["legendFormat"]: t["expr"] for t in watch["targets"]}
    tests = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": "topology_labeler_audit_resourceslice_watch_errors_total"
                        '{driver="gpu.nvidia.com",error="Forbidden",pod="a"}',
                        "values": "0+60x10",  # one a second
                    },
                    {
                        "series": "topology_labeler_audit_resourceslice_watch_errors_total"
                        '{driver="gpu.nvidia.com",error="Forbidden",pod="b"}',
                        "values": "0+60x10",
                    },
                    {
                        "series": 'topology_labeler_audit_watch_errors_total{error="expired"}',
                        "values": "0+30x10",
                    },
                ],
                "promql_expr_test": [
                    {
                        "expr": by_legend["ResourceSlices {{driver}} {{error}}"],
                        "eval_time": "10m",
                        "exp_samples": [
                            {"labels": '{driver="gpu.nvidia.com",error="Forbidden"}', "value": 2}
                        ],
                    },
                    {
                        "expr": by_legend["nodes {{error}}"],
                        "eval_time": "10m",
                        "exp_samples": [{"labels": '{error="expired"}', "value": 0.5}],
                    },
                ],
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    tested = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
