"""Every generated object passes the upstream CRD schemas (crd-check), where available.

crd-check and the upstream CRDs are not part of the repository: point CRD_CHECK at a
crd-check program to run this test (docs/compatibility.md); without it the test is
skipped, so the project's own suite runs on a fresh checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from labeler.emit import hypernodes
from tests.emit.test_golden import outputs
from tests.helpers import cli_env


def _crd_check() -> Path | None:
    env = os.environ.get("CRD_CHECK")
    return Path(env) if env and Path(env).is_file() else None


CRD_CHECK = _crd_check()
pytestmark = pytest.mark.skipif(CRD_CHECK is None, reason="no crd-check: set CRD_CHECK")

KUEUE_SETS = ["kueue/v0.19.2__*", "kueue/main-*"]
VOLCANO_1_14 = ["volcano/volcano-v1.14.0_*", "volcano/volcano-master-*"]
VOLCANO_OLD = ["volcano/volcano-v1.12.0_*", "volcano/volcano-v1.13.0_*"]


def run(files: list[Path], sets: list[str]) -> str:
    assert CRD_CHECK is not None
    args = [sys.executable, str(CRD_CHECK), "--strict"]
    for s in sets:
        args += ["--crd-set", f"*{s.split('/')[-1]}"]
    proc = subprocess.run(
        [*args, *map(str, files)], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "INVALID" not in proc.stdout and "SKIP" not in proc.stdout
    return proc.stdout


@pytest.mark.parametrize("case", ["oci", "ascend", "custom"])
def test_generated_objects_pass_the_crds(case: str, tmp_path: Path) -> None:
    produced = {o.filename: o for o in outputs(case) if o.applicable}
    kueue_files, hn_files = [], []
    for name, o in produced.items():
        path = tmp_path / name
        path.write_text(o.text(), encoding="utf-8")
        (hn_files if o.docs[0]["kind"] == "HyperNode" else kueue_files).append(path)
    out = run(kueue_files, KUEUE_SETS)
    assert out.count("\nOK ") + out.startswith("OK ") == 2 * len(kueue_files)
    has_tier_name = "tierName" in hn_files[0].read_text()
    sets = VOLCANO_1_14 if has_tier_name else [*VOLCANO_OLD, *VOLCANO_1_14]
    out = run(hn_files, sets)
    n_docs = sum(len(produced[f.name].docs) for f in hn_files)
    assert sum(line.startswith("OK ") for line in out.splitlines()) == n_docs * len(sets)


def test_long_names_pass_on_every_volcano_version(tmp_path: Path) -> None:
    from labeler.core.model import Level, NodePosition, Topology

    topo = Topology("t", (Level("x/a", "a" * 30), Level("x/b", "b" * 30)))
    ps = [NodePosition("n" * 70 + ".local", ("V" * 63, "W" * 63))]
    docs = hypernodes.build_hypernodes(
        topo, ps, hypernodes.HyperNodeOptions(volcano_version=(1, 12))
    )
    from labeler.emit.yamlio import dump_all

    f = tmp_path / "hn.yaml"
    f.write_text(dump_all(docs))
    run([f], [*VOLCANO_OLD, *VOLCANO_1_14])


def _edge_case_inputs(tmp_path: Path, levels: int) -> tuple[Path, Path]:
    """A profile with underscored level names and a CSV with 63-character values and node
    names over 63 characters (matched by regexMatch), nesting by construction."""
    profile = tmp_path / f"p{levels}.yaml"
    keys = [f"example.com/l{i}" for i in range(levels)]
    profile.write_text(
        f"name: edge_{levels}\nlevels:\n"
        + "".join(f"  - key: {k}\n    name: Level_{i}__X\n" for i, k in enumerate(keys))
    )
    rows = ["nodeName," + ",".join(keys)]
    for j in range(4):
        node = f"node-{j}" if j % 2 else f"node-{j}-" + "x" * 70 + ".example.com"
        # level i splits the nodes into 2**i blocks (capped at one per node)
        values = [f"V_{i:02d}_" + "v" * 54 + f"{j >> max(0, 2 - i):04d}" for i in range(levels)]
        assert all(len(v) == 63 for v in values)
        rows.append(",".join([node, *values]))
    csv = tmp_path / f"p{levels}.csv"
    csv.write_text("\n".join(rows) + "\n")
    return profile, csv


@pytest.mark.parametrize("levels", [1, 15])
def test_edge_cases_through_the_cli_pass_the_crds(tmp_path: Path, levels: int) -> None:
    """1 level, and 15 (Kueue's 16 with the hostname); DNS-unsafe level names; long values."""
    profile, csv = _edge_case_inputs(tmp_path, levels)
    out = tmp_path / "out"
    env = cli_env()
    cmd = [sys.executable, "-m", "labeler", "generate", "--profile", str(profile)]
    cmd += ["--from-csv", str(csv), "--output-dir", str(out), "--flavor-node-label", "a=b"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    run([out / "kueue-topology.yaml", out / "kueue-resourceflavor.yaml"], KUEUE_SETS)
    hn = out / "volcano-hypernodes.yaml"
    assert "regexMatch" in hn.read_text()
    run([hn], VOLCANO_1_14)
