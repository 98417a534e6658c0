"""The contract tests' ``api`` fixture: each test that takes it runs twice, against the
fake and against the real API server, which is the reference: where they differ, the fake
is wrong. Tests that take ``fake_kube`` instead stay fake-only and say why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakekube import FakeKube
from tests.realkube.adapter import RealKube
from tests.realkube.controlplane import ControlPlane


@pytest.fixture(scope="session")
def contract_real_kube(crds: ControlPlane) -> RealKube:
    """The session's control plane, with every CRD the fake serves installed."""
    return RealKube(crds)


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.realkube)])
def api(request: pytest.FixtureRequest) -> Iterator[FakeKube | RealKube]:
    """A fresh fake, or the real server emptied of what earlier tests left."""
    if request.param == "fake":
        yield request.getfixturevalue("fake_kube")
        return
    real = request.getfixturevalue("contract_real_kube")
    real.reset()
    yield real
