"""Contract: the real kubectl works against the API server (label, get)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.realkube.adapter import Kube
from tests.sim.volcano.objects import hypernode

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


def run(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL or "kubectl", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_kubectl_label_and_get(api: Kube, tmp_path: Path) -> None:
    """kubectl discovery (/version, /api, /apis, APIResourceList) is enough for `kubectl
    label` (GET then merge-patch) and `kubectl get nodes` (Table output)."""
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    api.add_node("n1")
    api.add_node("n2")
    out = run(kubeconfig, "label", "nodes", "n1", "foo=bar", "--overwrite")
    assert out.returncode == 0, out.stderr
    assert api.get_node("n1")["metadata"]["labels"]["foo"] == "bar"
    out = run(kubeconfig, "get", "nodes", "-l", "foo=bar")
    assert out.returncode == 0, out.stderr
    assert "n1" in out.stdout and "n2" not in out.stdout and "Ready" in out.stdout
    out = run(kubeconfig, "get", "no", "n2", "-o", "jsonpath={.metadata.name}")
    assert out.returncode == 0 and out.stdout == "n2", out.stderr
    out = run(kubeconfig, "label", "nodes", "n1", "bad key=x")
    assert out.returncode != 0


def test_kubectl_get_custom_objects(api: Kube, tmp_path: Path) -> None:
    """kubectl finds CRD-served kinds by short name through discovery."""
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    api.add_object("HyperNode", hypernode("s0", 1, nodes=("a",)))  # admission wants a member
    out = run(kubeconfig, "get", "hn", "-o", "name")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hypernode.topology.volcano.sh/s0"
