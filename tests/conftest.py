"""Shared fixtures.  Keep minimal; add fixtures next to the tests that need them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakekube import FakeKube
from tests.live import clock, exporter, exporter_of, running, tls_server
from tests.realkube.fixtures import crds, own_real_kube, real_kube, real_kube_bin

__all__ = [
    "clock",
    "crds",
    "exporter",
    "exporter_of",
    "own_real_kube",
    "real_kube",
    "real_kube_bin",
    "running",
    "tls_server",
]


@pytest.fixture
def fake_kube() -> Iterator[FakeKube]:
    """A started fake API server (function scope: every test gets a fresh cluster)."""
    with FakeKube() as fake:
        yield fake


@pytest.fixture
def kubeconfig(fake_kube: FakeKube, tmp_path: Path) -> Path:
    """Path of a kubeconfig (no credentials) pointing at fake_kube."""
    return fake_kube.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture(autouse=True)
def _logging_put_back() -> Iterator[None]:
    """A command run in-process (``labeler.cli.main``) points the root logger at the
    stderr of that moment, which is this test's capture; left there, the next log line of
    any later test (an exporter's thread, say) writes to a closed capture and prints
    "Logging error: I/O operation on closed file". Remove what the command installed
    (plain StreamHandlers; pytest's own are subclasses) and put the level back."""
    root = logging.getLogger()
    level = root.level
    yield
    for handler in root.handlers[:]:
        if type(handler) is logging.StreamHandler:
            root.removeHandler(handler)
    root.setLevel(level)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the real control plane carries the ``realkube`` marker, so that
    ``-m realkube`` (or ``-m 'not realkube'``) selects the tier."""
    real = {"real_kube", "own_real_kube", "real_kube_bin"}
    for item in items:
        if real & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.realkube)
