"""Shared fixtures.  Keep minimal; add fixtures next to the tests that need them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakekube import FakeKube


@pytest.fixture
def fake_kube() -> Iterator[FakeKube]:
    """A started fake API server (function scope: every test gets a fresh cluster)."""
    with FakeKube() as fake:
        yield fake


@pytest.fixture
def kubeconfig(fake_kube: FakeKube, tmp_path: Path) -> Path:
    """Path of a kubeconfig (no credentials) pointing at fake_kube."""
    return fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
