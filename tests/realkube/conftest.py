"""Fixtures of the realkube tier (the control plane itself comes from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.fake_imds import FakeImds


@pytest.fixture
def imds() -> Iterator[FakeImds]:
    """A started loopback metadata server (OCI IMDS documents per node)."""
    with FakeImds() as fake:
        yield fake
