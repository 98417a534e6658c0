"""advise against Volcano's own scheduler: the recorded regressions (no Go needed) and a
fixed-seed batch run against the oracle built from the Go module proxy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labeler.tas.volcano import VOLCANO_VERSION
from tests.oracles.volcano import build, compare

REGRESSIONS = Path(__file__).parent / "regressions"
CASES = sorted(p for p in REGRESSIONS.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_advise_answers_as_volcano_did(case: Path) -> None:
    recorded = json.loads((case / "oracle.json").read_text())
    answer = compare.advise(case)
    assert compare.differences(case, answer, recorded) == []


def test_running_members_of_a_podgroup_are_counted_with_f_and_podgroup(tmp_path: Path) -> None:
    case = REGRESSIONS / "running-members-in-snapshot"
    expected = "1/2 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 Running"
    assert compare.advise(case)["message"].startswith(expected)
    snap = yaml.safe_load((case / "snapshot.yaml").read_text())
    snap["items"] += [
        o for o in yaml.safe_load_all((case / "job.yaml").read_text()) if o["kind"] == "Pod"
    ]
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(snap))
    cmd = [sys.executable, "-m", "labeler", "advise", "--podgroup", "team/train"]
    cmd += ["--from-snapshot", str(tmp_path / "snap.yaml"), "-o", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert json.loads(out.stdout)["message"].startswith(expected)


def test_oracle_pins_the_version_advise_models() -> None:
    assert build.version() == VOLCANO_VERSION


@pytest.mark.xfail(
    strict=True,
    reason="66 of 100 agree today (docs/compatibility.md lists the open classes); "
    "remove this mark when the batch agrees",
)
def test_fixed_seed_batch_agrees(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Go is needed to build the Volcano oracle")
        pytest.skip("Go is not installed; run scripts/oracle.sh volcano --n 200 --seed 1")
    result = compare.batch(200, 1, tmp_path)
    assert result.disagreements == [], "\n".join(result.disagreements)
