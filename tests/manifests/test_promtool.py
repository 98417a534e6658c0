"""The PrometheusRule's alerts with Prometheus's own rule checker and unit-test runner
(``promtool``, Debian's ``prometheus`` package; .ci/run installs it): the rules parse, and
the hot-swap alert fires on a ClusterQueue with an at-risk Workload after 30 minutes, not
before, and not for a replaceable one."""

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
"""


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL, "promtool is needed in CI"
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_rules_parse_and_the_hot_swap_alert_fires_after_30_minutes(tmp_path: Path) -> None:
    rule = yaml.safe_load((MANIFESTS / "audit" / "prometheusrule.yaml").read_text())
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    checked = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (tmp_path / "tests.yaml").write_text(TESTS)
    tested = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
