"""The kube-scheduler oracle: a fixed-seed batch through the real kube-scheduler (the
realkube tier: it skips locally without Go, fails under CI=true), the recorded
disagreements through advise's CLI (no Go, no control plane), and one pinned release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeler.sim.kubesched import KUBERNETES
from tests.oracles.kubesched import build, oracle
from tests.oracles.kubesched.compare import agrees, batch, run_advise

REGRESSIONS = Path(__file__).with_name("regressions")
CI_SEED = 1
CI_N = 200
"""About 1.2-1.6 s a scenario on two shared cores: 4-5.5 minutes (tests/oracles/README.md)."""


def test_simulator_and_oracle_model_one_release() -> None:
    assert KUBERNETES == oracle.KUBERNETES == build.script_version()


def test_fixed_seed_batch_agrees_on_every_scenario(real_kube_bin: Path, tmp_path: Path) -> None:
    """Every scenario of the fixed seed agrees, by the rules of compare.py: kube-scheduler's
    draws among nodes of equal score are replayed, and each scenario may go through it up
    to three times for its other draws (tests/oracles/README.md says which)."""
    result = batch(CI_N, CI_SEED, tmp_path)
    found = "\n".join(str(d) for d in result.disagreements)
    assert not result.disagreements, f"{result.agree} of {CI_N} agree:\n{found}"


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
    assert agrees(folder, ours, theirs) is None
    bound = all(p["state"] == "bound" for p in theirs["pods"])
    assert code == (0 if bound else 3)


def test_replayed_draws_take_only_nodes_advise_found_tied() -> None:
    """kube-scheduler's answer with a pod moved off a node advise found no tie for, to
    another one, is a disagreement even with the draws replayed."""
    folder = REGRESSIONS / "node-tie-drawn-at-random"
    _code, ours = run_advise(folder)
    assert isinstance(ours, dict), ours
    theirs = json.loads((folder / "oracle.json").read_text())
    alone = next(p for p in ours["pods"] if p["node"] and not p["tied_nodes"])
    moved = next(p for p in theirs["pods"] if p["name"] == alone["name"])
    other = next(p["node"] for p in theirs["pods"] if p["node"] != moved["node"])
    moved["node"] = other
    found = agrees(folder, ours, theirs)
    assert found is not None and found[0] == "spread"


def test_held_domains_named_in_an_order_the_walk_cannot_give_disagree() -> None:
    folder = REGRESSIONS / "held-domains-met-in-any-order"
    _code, ours = run_advise(folder)
    assert isinstance(ours, dict), ours
    theirs = json.loads((folder / "oracle.json").read_text())
    for p in theirs["pods"]:
        p["message"] = p["message"].replace("zone-11, zone-2", "zone-11, zone-10")
    found = agrees(folder, ours, theirs)
    assert found is not None and found[0] == "message"
