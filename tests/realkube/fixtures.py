"""The session's real control plane, built if needed: a skip without Go locally, a failure
under ``CI=true`` (where the tier must run)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.realkube import cluster, upstream
from tests.realkube.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "control-plane.sh"


def _missing(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI=true but {why}; the realkube tier must run in CI", pytrace=False)
    pytest.skip(f"{why}; run `scripts/control-plane.sh build` (needs Go and the Go module proxy)")


def built_bin() -> Path:
    """The folder of the control plane's binaries, building them first if one is missing."""
    bin_dir = Path(
        subprocess.run(
            [str(SCRIPT), "bin"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    wanted = ("etcd", "kube-apiserver", "kube-scheduler", "kubectl", "kwok", "helm")
    if all((bin_dir / name).exists() for name in wanted):
        return bin_dir
    if shutil.which("go") is None:
        _missing("the control plane is not built and Go is not installed")
    build = subprocess.run([str(SCRIPT), "build"], capture_output=True, text=True)
    if build.returncode != 0:
        pytest.fail(
            f"scripts/control-plane.sh build failed:\n{build.stderr[-4000:]}", pytrace=False
        )
    return bin_dir


@pytest.fixture(scope="session")
def real_kube_bin() -> Path:
    return built_bin()


@pytest.fixture(scope="session")
def real_kube(
    real_kube_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    """One control plane for the session. Tests share it: each names its own nodes and
    namespaces and removes them, and one that kills a component restarts it."""
    plane = ControlPlane(tmp_path_factory.mktemp("realkube"), real_kube_bin)
    plane.start()
    yield plane
    plane.stop()


@pytest.fixture
def own_real_kube(real_kube_bin: Path, tmp_path: Path) -> Iterator[ControlPlane]:
    """A control plane of the test's own, for tests that stop etcd or the API server."""
    plane = ControlPlane(tmp_path / "plane", real_kube_bin)
    plane.start()
    yield plane
    plane.stop()


@pytest.fixture(scope="session")
def crds(real_kube: ControlPlane) -> ControlPlane:
    """The session's control plane with the released Kueue and Volcano CRDs installed and
    Volcano's HyperNode admission policy enforced."""
    files = [*upstream.kueue_crds(), *upstream.volcano_crds()]
    real_kube.kubectl("apply", "--server-side", *(f"--filename={f}" for f in files))
    names = [
        next(d for d in yaml.safe_load_all(f.read_text()) if d)["metadata"]["name"] for f in files
    ]
    for name in names:
        cluster.wait_established(real_kube, name)
    real_kube.kubectl("apply", "--server-side", "-f", "-", input=upstream.hypernode_policy())
    return real_kube
