"""Each disagreement class the Kueue oracle found, as a scenario folder with the oracle's
recorded answer: advise, through its CLI, must now answer as Kueue did (no Go needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.oracles.kueue.compare import agree
from tests.oracles.kueue.scenarios import Scenario

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
# Classes found and not fixed yet (docs/compatibility.md, "The Kueue oracle"): advise
# answers differently, and the test says so instead of passing.
OPEN: set[str] = set()


@pytest.mark.parametrize("name", sorted(p.name for p in REGRESSIONS.iterdir() if p.is_dir()))
def test_advise_answers_as_kueue_did(name: str) -> None:
    folder = REGRESSIONS / name
    oracle = json.loads((folder / "oracle.json").read_text())
    verdict = agree(Scenario.read(folder), folder, oracle)
    if name in OPEN:
        assert verdict is not None, f"{name} agrees now: take it out of OPEN"
        pytest.xfail(f"known disagreement: {verdict}")
    assert verdict is None, verdict


def test_sibling_flavor_usage_is_subtracted_when_placing() -> None:
    folder = REGRESSIONS / "sibling-flavor-place"
    oracle = json.loads((folder / "oracle.json").read_text())
    assert oracle["outcome"] == "pending"
    assert 'excluded: resource "cpu": 1' in oracle["message"]
    assert agree(Scenario.read(folder), folder, oracle) is None


def test_two_failures_name_both_nodes() -> None:
    oracle = json.loads((REGRESSIONS / "two-failed-nodes" / "oracle.json").read_text())
    assert oracle["outcome"] == "evicted"
    assert oracle["message"].startswith(
        "Workload eviction triggered due to multiple TAS assigned node failures, including: "
    )
