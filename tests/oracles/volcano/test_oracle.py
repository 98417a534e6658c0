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

from labeler.sim.volcano import VOLCANO_VERSION
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


def test_a_roles_failed_node_is_refused_to_its_later_pods() -> None:
    """Volcano's predicate error cache: the second pod of the role is refused the node the
    first one failed on, though its own nodeSelector matches it; the gang is not placed."""
    answer = compare.advise(REGRESSIONS / "predicate-error-cache-per-role")
    assert answer["pods"] == []
    assert answer["message"].startswith(
        "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 1 Schedulable, 1 Unschedulable"
    )


def test_a_policy_without_match_label_keys_is_named_as_a_trap() -> None:
    """Volcano puts no pod under it, so its minSubGroups stops the gang: the answer says so."""
    answer = compare.advise(REGRESSIONS / "subgroup-policy-without-match-keys")
    assert answer["pods"] == []
    assert any(
        t.startswith("sub-group policy t0 holds no pod (it has no matchLabelKeys")
        for t in answer["traps"]
    )


def test_preferred_affinity_weighs_its_raw_weight() -> None:
    answer = compare.advise(REGRESSIONS / "preferred-affinity-unnormalized")
    assert [p["node"] for p in answer["pods"]] == ["big"]


def test_the_oracle_is_handed_advises_dry_run_picks(tmp_path: Path) -> None:
    """advise's pick among equal nodes in a HyperNode it did not keep decides where the gang
    goes; its final placement does not name it, prefer.json's "tried" does."""
    case = REGRESSIONS / "dry-run-node-tie"
    answer, tried = compare.advise_traced(case)
    placed = {p["name"]: p["node"] for p in answer["pods"]}
    assert placed["team/train-t0-0"] == "n-s1-r10-3"
    assert tried["team/train-t0-0"] == [
        ["s1", "n-s1-r10-3"],
        ["s10", "n-s10-r1-0"],
        ["<cluster-top-hypernode>", "n-s1-r10-3"],
    ]
    for name in ("job.yaml", "snapshot.yaml"):
        shutil.copy(case / name, tmp_path / name)
    compare.write_prefer(tmp_path, answer, tried)
    assert json.loads((tmp_path / "prefer.json").read_text()) == json.loads(
        (case / "prefer.json").read_text()
    )


def _need_go() -> None:
    if shutil.which("go") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Go is needed to build the Volcano oracle")
        pytest.skip("Go is not installed; run scripts/oracle.sh volcano --n 200 --seed 1")


TIES = [
    "dry-run-node-tie",
    "round-two-hypernode-tie",
    "wider-attempt-node-tie",
    "unschedulable-count-node-tie",
    "one-pod-rounds-hypernode-tie",
]


@pytest.mark.parametrize("name", TIES)
def test_volcano_takes_advises_tie_picks_on_every_run(name: str) -> None:
    """Volcano's random ties (a node in a dry run or in a wider HyperNode's attempt, a
    HyperNode in a later round) fall as advise's did, whatever the seed, given prefer.json."""
    _need_go()
    exe, case = build.build(), REGRESSIONS / name
    answer = compare.advise(case)
    for seed in range(1, 5):
        assert compare.differences(case, answer, compare.oracle(exe, case, seed)) == []


def test_the_oracle_converts_a_job_with_volcanos_webhooks_and_job_controller() -> None:
    """The Job's PodGroup and pods come from Volcano's own code: the mutating webhook's
    minAvailable (minPartitions 0 × partitionSize), the controller's name, sub-group
    policies and partition labels; advise's conversion and answer agree with them."""
    _need_go()
    exe, case = build.build(), REGRESSIONS / "job-min-resources-zero-count"
    o = compare.oracle(exe, case)
    pg = o["converted"]["podGroup"]
    assert pg["metadata"]["name"] == "train-job-uid"
    assert pg["spec"]["minTaskMember"] == {"t0": 0, "t1": 0}
    assert [p["name"] for p in pg["spec"]["subGroupPolicy"]] == ["t0", "t1"]
    labels = [p["metadata"]["labels"]["volcano.sh/partition-id"] for p in o["converted"]["pods"]]
    assert labels[:4] == ["0", "0", "1", "1"]
    assert compare.differences(case, compare.advise(case), o) == []


def test_oracle_pins_the_version_advise_models() -> None:
    assert build.version() == VOLCANO_VERSION


def test_fixed_seed_batch_agrees(tmp_path: Path) -> None:
    _need_go()
    result = compare.batch(200, 1, tmp_path)
    assert result.disagreements == [], "\n".join(map(str, result.disagreements))
