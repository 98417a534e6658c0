"""The layers of ``labeler/`` (docs/architecture.md, "Layers"), as import-linter's contracts
in ``.importlinter``; ``scripts/test.sh`` runs ``lint-imports`` on the tree.

Here: the tree keeps every contract, and each contract catches each kind of import that
breaks it (at the top of a file, inside a function, under ``TYPE_CHECKING``, relative),
in a copy of the tree with that one import added.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / ".importlinter"


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports of the venv this test runs in, on the ``labeler`` package in ``cwd``."""
    lint = str(Path(sys.executable).with_name("lint-imports"))
    return subprocess.run(
        [lint, "--no-logo", "--config", str(CONFIG)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_tree_keeps_every_contract() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(
        REPO / "labeler", root / "labeler", ignore=shutil.ignore_patterns("__pycache__")
    )
    return root


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        # a feature importing another, at the top of a file
        ("topomap/extra.py", "from labeler.sim.kueue.tree import Tree\n", "no feature imports"),
        # inside a function body
        ("agent/extra.py", "def f():\n    import labeler.emit.slurm\n", "no feature imports"),
        # under TYPE_CHECKING, a lower layer importing a higher one
        (
            "base/extra.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from labeler.audit.store import X\n",
            "layers point down",
        ),
        # relative, between the two packages that reach the outside world
        ("sources/extra.py", "from ..kube import nodes\n", "kube and sources never"),
        ("core/extra.py", "from labeler import cli\n", "layers point down"),
        # the simulators: each on its own, over common, and pure
        ("sim/volcano/extra.py", "from labeler.sim.kueue import tree\n", "no simulator imports"),
        ("sim/common/extra.py", "from labeler.sim.kueue import tree\n", "stand on common"),
        ("sim/kubesched/extra.py", "from labeler.kube import pods\n", "import only common"),
        # every child of labeler/ has a layer, so a module beside the entry points fails
        ("helpers.py", "X = 1\n", "layers point down"),
        ("sim/extra.py", "X = 1\n", "stand on common"),
    ],
)
def test_each_contract_catches_the_import_that_breaks_it(
    tree_copy: Path, module: str, source: str, broken: str
) -> None:
    path = tree_copy / "labeler" / module
    path.write_text(source)
    try:
        done = lint_imports(tree_copy)
    finally:
        path.unlink()
    assert done.returncode == 1, done.stdout + done.stderr
    line = next((ln for ln in done.stdout.splitlines() if broken in ln), "")
    assert line.endswith("BROKEN"), done.stdout
