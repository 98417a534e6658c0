"""Fixtures of the chart's tests: the real helm (and kubectl) of the control-plane cache, and
the Prometheus Operator's CRDs from the Go module proxy for the monitoring objects."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helm.helpers import Helm
from tests.realkube import cluster, upstream
from tests.realkube.controlplane import ControlPlane

# The Prometheus Operator release whose CRDs (ServiceMonitor, PrometheusRule) the cluster
# gets; its Go module carries them (example/prometheus-operator-crd/).
PROMETHEUS_OPERATOR = ("github.com/prometheus-operator/prometheus-operator", "v0.85.0")
MONITORING_CRDS = ("servicemonitors", "prometheusrules")


@pytest.fixture(scope="session")
def helm(real_kube_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """helm with no cluster: template, lint."""
    return Helm(real_kube_bin, tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="session")
def kubectl_bin(real_kube_bin: Path) -> Path:
    return real_kube_bin / "kubectl"


@pytest.fixture(scope="session")
def cluster_helm(real_kube: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """helm against the session's real control plane, as its admin."""
    return Helm(real_kube.bin, tmp_path_factory.mktemp("helm-cluster"), real_kube.kubeconfig)


@pytest.fixture(scope="session")
def monitoring_crds(real_kube: ControlPlane) -> None:
    """The ServiceMonitor and PrometheusRule CRDs, established in the session's cluster."""
    if shutil.which("go") is None:
        if os.environ.get("CI"):
            pytest.fail("CI=true but Go is not installed; the chart's monitoring tests need it")
        pytest.skip("Go is not installed: no Prometheus Operator CRDs")
    folder = upstream.module_dir(*PROMETHEUS_OPERATOR) / "example" / "prometheus-operator-crd"
    for plural in MONITORING_CRDS:
        crd = folder / f"monitoring.coreos.com_{plural}.yaml"
        real_kube.kubectl("apply", "--server-side", "-f", str(crd))
        cluster.wait_established(real_kube, f"{plural}.monitoring.coreos.com")
