"""The README's first command, scripts/example.sh, runs to the end: it labels the example
cluster, finds the node nobody planned for, writes the scheduler objects and the map, and
explains by Kueue's and Volcano's rules why the 4-node job stays pending."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_readme_examples import readme_commands

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_example_script_runs_to_the_end() -> None:
    (argv,) = readme_commands("./scripts/example.sh")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout
    assert "12 node(s): 12 labeled, 0 unchanged" in out  # the first apply
    assert "12 node(s): 0 labeled, 12 unchanged" in out  # the re-run writes nothing
    assert "Unlabeled nodes: gpu-00" in out
    assert "Verdict: does NOT fit now" in out  # Kueue's, for the 4-node job
    assert "DOES NOT FIT: Volcano binds nothing this cycle" in out
    example = ROOT / "out" / "example"
    assert (example / "scheduler" / "kueue-topology.yaml").is_file()
    for page in ("topology-map.html", "advise-map.html"):
        assert (example / page).read_text().startswith("<!doctype html>"), page
