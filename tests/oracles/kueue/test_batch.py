"""A fixed-seed batch of generated scenarios through advise and Kueue's own scheduler: every
one must agree. The oracle is built from the Go module proxy (tests/oracles/kueue/build.py);
under CI=true a missing Go fails the test, elsewhere it is skipped with how to run it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.oracles.kueue import build, compare

SEED = 1
N = 200


@pytest.mark.slow
def test_fixed_seed_batch_agrees(tmp_path: Path) -> None:
    if not build.have_go() and os.environ.get("CI") != "true":
        pytest.skip("Go is not installed; run scripts/oracle.sh kueue --n 200 --seed 1 with Go")
    result = compare.batch(N, SEED, tmp_path)
    lines = [f"{d.name}: {d.kind}: {d.detail} ({d.folder})" for d in result.disagreements]
    assert result.agree == N, "\n".join(lines)
