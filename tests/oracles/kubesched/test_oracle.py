"""The kube-scheduler oracle: a fixed-seed batch through the real kube-scheduler (the
realkube tier: it skips locally without Go, fails under CI=true), the recorded
disagreements through advise's CLI (no Go, no control plane), and one pinned release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from labeler.sim.kubesched import KUBERNETES
from tests.oracles.kubesched import build, oracle
from tests.oracles.kubesched.compare import batch, compare, run_advise

REGRESSIONS = Path(__file__).with_name("regressions")
CI_SEED = 1
CI_N = 200
"""About 1.2-1.6 s a scenario on two shared cores: 4-5.5 minutes (tests/oracles/README.md)."""


def test_simulator_and_oracle_model_one_release() -> None:
    assert KUBERNETES == oracle.KUBERNETES == build.script_version()


# Not every scenario agrees every time (docs/compatibility.md lists what is left: nodes of
# equal score, which kube-scheduler draws between, can change the pods per node). The batch
# is a ratchet: agreement may not fall below what the simulator reached. The last two
# batches here read 199 and 199 of 200 (earlier ones with the same rules 199 and 200; a
# scenario that disagrees is tried three times); the margin is for the scenarios whose
# outcome the scheduler's draws still change. At 200 it is the bar.
AGREE_AT_LEAST = 193


def test_fixed_seed_batch_agrees_at_least_as_much_as_before(
    real_kube_bin: Path, tmp_path: Path
) -> None:
    result = batch(CI_N, CI_SEED, tmp_path)
    found = "\n".join(str(d) for d in result.disagreements)
    assert result.agree >= AGREE_AT_LEAST, f"{result.agree} of {CI_N} agree:\n{found}"


def _cases() -> list[object]:
    out: list[object] = []
    for folder in sorted(p for p in REGRESSIONS.iterdir() if p.is_dir()):
        still = folder / "OPEN"
        marks = (
            [pytest.mark.xfail(strict=True, reason=still.read_text().strip())]
            if still.exists()
            else []
        )
        out.append(pytest.param(folder, id=folder.name, marks=marks))
    return out


@pytest.mark.parametrize("folder", _cases())
def test_recorded_disagreement_answers_as_kube_scheduler(folder: Path) -> None:
    """advise, through its CLI on the checked-in files, gives kube-scheduler's recorded
    answer (oracle.json) by the batch's comparison rules."""
    code, ours = run_advise(folder)
    assert isinstance(ours, dict), ours
    theirs = json.loads((folder / "oracle.json").read_text())
    nodes = yaml.safe_load((folder / "snapshot.yaml").read_text())["items"]
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes if n["kind"] == "Node"}
    assert compare(ours, theirs, labels) is None
    bound = all(p["state"] == "bound" for p in theirs["pods"])
    assert code == (0 if bound else 3)
