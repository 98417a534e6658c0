"""The layers of ``labeler/`` (docs/architecture.md, "Layers"), as import-linter's contracts
in ``.importlinter``; ``scripts/test.sh`` runs ``lint-imports`` on the tree.

Here: the tree keeps every contract, and each contract catches each kind of import that
breaks it (at the top of a file, inside a function, under ``TYPE_CHECKING``, relative),
in a copy of the tree with those imports added.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / ".importlinter"

# (module added to a copy of labeler/, its source, the contract it breaks, what the
# contract's report must name)
BREAKS = [
    # a feature importing another, at the top of a file and inside a function
    (
        "topomap/extra.py",
        "from labeler.sim.kueue.tree import Tree\n",
        "features",
        "labeler.topomap.extra -> labeler.sim.kueue.tree (l.1)",
    ),
    (
        "agent/extra.py",
        "def f():\n    import labeler.emit.slurm\n",
        "features",
        "labeler.agent.extra -> labeler.emit.slurm (l.2)",
    ),
    # under TYPE_CHECKING, a lower layer importing a higher one
    (
        "base/extra.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from labeler.audit.store import X\n",
        "layers",
        "labeler.base.extra -> labeler.audit.store (l.3)",
    ),
    (
        "core/extra.py",
        "from labeler import cli\n",
        "layers",
        "labeler.core.extra -> labeler.cli (l.1)",
    ),
    # relative, between the two packages that reach the outside world
    (
        "sources/extra.py",
        "from ..kube import nodes\n",
        "access",
        "labeler.sources.extra -> labeler.kube.nodes (l.1)",
    ),
    # the simulators: each on its own, over common, and never reaching the cluster
    (
        "sim/volcano/extra.py",
        "from labeler.sim.kueue import tree\n",
        "simulators",
        "labeler.sim.volcano.extra -> labeler.sim.kueue.tree (l.1)",
    ),
    (
        "sim/common/extra.py",
        "from labeler.sim.kubesched import state\n",
        "sim-layers",
        "labeler.sim.common.extra -> labeler.sim.kubesched.state (l.1)",
    ),
    (
        "sim/kubesched/extra2.py",
        "from labeler.kube import pods\n",
        "simulators-pure",
        "labeler.sim.kubesched.extra2 -> labeler.kube.pods (l.1)",
    ),
    # every child of labeler/ and of labeler/sim/ has a layer (exhaustive)
    ("helpers.py", "X = 1\n", "layers", "- labeler.helpers\n"),
    ("sim/extra.py", "X = 1\n", "sim-layers", "- labeler.sim.extra\n"),
]


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports of the venv this test runs in, on the ``labeler`` package in ``cwd``."""
    lint = str(Path(sys.executable).with_name("lint-imports"))
    return subprocess.run(
        [lint, "--no-logo", "--no-cache", "--config", str(CONFIG)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def contract_names() -> dict[str, str]:
    """Contract id → its name, as the report heads its section."""
    config = configparser.ConfigParser()
    config.read(CONFIG)
    prefix = "importlinter:contract:"
    return {s[len(prefix) :]: config[s]["name"] for s in config.sections() if s.startswith(prefix)}


def sections(report: str, names: dict[str, str]) -> dict[str, str]:
    """Each broken contract's part of the report, by contract id."""
    heads = {cid: report.find(f"\n{name}\n{'-' * len(name)}\n") for cid, name in names.items()}
    starts = sorted(i for i in heads.values() if i >= 0)
    out = {}
    for cid, start in heads.items():
        if start >= 0:
            end = next((i for i in starts if i > start), len(report))
            out[cid] = report[start:end]
    return out


def test_the_tree_keeps_every_contract() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contract_names())} kept, 0 broken." in done.stdout


def test_each_contract_catches_each_kind_of_import_that_breaks_it(tmp_path: Path) -> None:
    shutil.copytree(
        REPO / "labeler", tmp_path / "labeler", ignore=shutil.ignore_patterns("__pycache__")
    )
    for module, source, _, _ in BREAKS:
        (tmp_path / "labeler" / module).write_text(source)
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    names = contract_names()
    broken = sections(done.stdout, names)
    assert set(broken) == {contract for _, _, contract, _ in BREAKS}, done.stdout
    for module, _, contract, evidence in BREAKS:
        assert evidence in broken[contract], f"{module}: {contract}\n{done.stdout}"
