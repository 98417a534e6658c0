"""Fixtures for the source tests: the fake Ascend driver (npu-smi script, libdcmi.so)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.sources.ascend_fakes import FakeNpuSmi, build_fake_dcmi, c_compiler


@pytest.fixture
def fake_npu_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNpuSmi:
    """A fake ``npu-smi`` first on PATH for this test."""
    fake = FakeNpuSmi(tmp_path / "bin")
    monkeypatch.setenv("PATH", fake.env()["PATH"])
    return fake


@pytest.fixture(scope="session")
def fake_dcmi_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fake ``libdcmi.so``, compiled once per session (skipped without a C compiler)."""
    if c_compiler() is None:
        pytest.skip("no C compiler (cc/gcc/clang): the ctypes DCMI path cannot be exercised")
    try:
        return build_fake_dcmi(tmp_path_factory.mktemp("dcmi"))
    except subprocess.CalledProcessError as e:
        pytest.skip(f"the C compiler could not build a shared library: {e.stderr!r}")


@pytest.fixture
def dcmi_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Clear every FAKE_DCMI_* knob so each test states what the library returns."""
    import os

    for name in list(os.environ):
        if name.startswith("FAKE_DCMI_"):
            monkeypatch.delenv(name)
    return monkeypatch
