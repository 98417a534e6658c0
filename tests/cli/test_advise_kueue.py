"""``advise`` with Kueue's feature gates, as a user types it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from labeler.cli import main

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "snapshot-oci.yaml"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(["advise", *args, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


QUICK = (
    "--profile", "oci-rdma", "--from-snapshot", str(SNAPSHOT),
    "--pods", "12", "--request", "nvidia.com/gpu=1", "--preferred", "local_block",
)  # fmt: skip


def test_balanced_placement_gate_spreads_a_preferred_job_evenly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, best_fit = run(capsys, *QUICK)
    assert code == 0 and not best_fit["balanced_placement"]
    assert {a["node"]: a["count"] for a in best_fit["assignment"]} == {"gpu-03": 8, "gpu-04": 4}
    code, balanced = run(capsys, *QUICK, "--kueue-feature-gates", "TASBalancedPlacement=true")
    assert code == 0 and balanced["balanced_placement"]
    assert {a["node"]: a["count"] for a in balanced["assignment"]} == {"gpu-03": 6, "gpu-04": 6}


def test_an_unknown_gate_is_a_usage_error_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["advise", *QUICK, "--kueue-feature-gates", "TASNope=true"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized feature gate: TASNope" in err and "TASBalancedPlacement" in err


def test_help_names_the_modelled_kueue(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["advise", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Kueue is modelled as of Kueue v0.20.0-devel (main @ ff69552e" in out
    assert "TASBalancedPlacement (off" in out


def test_failed_node_needs_a_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", *QUICK, "--failed-node", "gpu-03"]) == 2
    assert "--failed-node needs an admitted Workload" in capsys.readouterr().err
