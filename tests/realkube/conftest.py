"""Fixtures of the realkube tier (the control plane itself comes from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from tests.e2e.fake_imds import FakeImds
from tests.realkube import upstream
from tests.realkube.controlplane import ControlPlane


@pytest.fixture(scope="session")
def crds(real_kube: ControlPlane) -> ControlPlane:
    """The session's control plane with the released Kueue and Volcano CRDs installed and
    Volcano's HyperNode admission policy enforced."""
    files = [*upstream.kueue_crds(), *upstream.volcano_crds()]
    real_kube.kubectl("apply", "--server-side", *(f"--filename={f}" for f in files))
    names = [yaml.safe_load(f.read_text())["metadata"]["name"] for f in files]
    real_kube.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in names)
    )
    real_kube.kubectl("apply", "--server-side", "-f", "-", input=upstream.hypernode_policy())
    return real_kube


@pytest.fixture
def imds() -> Iterator[FakeImds]:
    """A started loopback metadata server (OCI IMDS documents per node)."""
    with FakeImds() as fake:
        yield fake
