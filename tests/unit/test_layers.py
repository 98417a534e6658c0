"""The layers of ``labeler/`` as code (docs/architecture.md, "Layers").

Every import of a project module counts: at the top of a file, inside a function, under
``TYPE_CHECKING``, relative, or through ``importlib.import_module`` with a literal name.
A module may import its own package and any lower layer; ``kube`` and ``sources`` never
import each other, and no feature imports another feature. There is no exceptions list:
code that needs one is changed instead.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "labeler"

# Rank of each unit: a module may import units of a lower rank, and its own unit.
BASE, CORE, ACCESS, FEATURE, COMMANDS, TOP = range(6)
UNITS = {
    "base": BASE,
    "core": CORE,
    "kube": ACCESS,
    "sources": ACCESS,
    "agent": FEATURE,
    "bulk": FEATURE,
    "emit": FEATURE,
    "audit": FEATURE,
    "sim": FEATURE,
    "topomap": FEATURE,
    "commands": COMMANDS,
}
TOP_FILES = {"__init__.py", "__main__.py", "cli.py", "py.typed"}


def unit_of(module: str) -> str:
    """``labeler.core.plan`` → ``core``; the package itself and cli/__main__ → ``top``."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in UNITS:
        return parts[1]
    return "top"


def rank(unit: str) -> int:
    return UNITS.get(unit, TOP)


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def project_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every import of a ``labeler`` module anywhere in the file."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            # ``from labeler import x`` names the module labeler.x when x is one.
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield node.lineno, sub if _is_module(sub) else target
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            name = _literal_prefix(node.args[0])
            if name:
                yield node.lineno, name


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    base = ROOT.parent / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def _literal_prefix(arg: ast.expr) -> str:
    """The module a literal (or an f-string's literal head) names, up to its last dot."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        head = arg.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value.rpartition(".")[0]
    return ""


def violation(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported``, or None when it may."""
    if imported != "labeler" and not imported.startswith("labeler."):
        return None
    mine, theirs = unit_of(importer), unit_of(imported)
    if mine == theirs:
        return None
    if rank(theirs) > rank(mine):
        return f"{mine} may not import the higher layer {theirs}"
    if rank(theirs) == rank(mine) == ACCESS:
        return "kube and sources never import each other"
    if rank(theirs) == rank(mine) == FEATURE:
        return f"the feature {mine} may not import the feature {theirs}"
    return None


def modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_every_import_points_down() -> None:
    found = []
    for path in modules():
        importer = module_name(path)
        for line, imported in project_imports(path):
            why = violation(importer, imported)
            if why:
                found.append(f"{path.relative_to(ROOT.parent)}:{line}: {imported}: {why}")
    assert found == []


def test_every_package_has_a_layer_and_the_top_holds_only_the_entry_points() -> None:
    packages = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(UNITS)
    files = {p.name for p in ROOT.iterdir() if p.is_file()}
    assert files <= TOP_FILES, f"move {sorted(files - TOP_FILES)} into a layer"


@pytest.mark.parametrize(
    ("source", "importer", "why"),
    [
        ("from labeler.sim.kueue.tree import Tree\n", "labeler.topomap.model", "feature topomap"),
        ("def f():\n    import labeler.emit.slurm\n", "labeler.agent.loop", "feature emit"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from labeler.audit.store import X\n",
            "labeler.base.metrics",
            "higher layer audit",
        ),
        ("from labeler.sources import Reading\n", "labeler.kube.nodes", "never import each"),
        ("from labeler import cli\n", "labeler.core.plan", "higher layer top"),
        ("from ..kube import nodes\n", "labeler.sources.gce", "never import each"),
        (
            "import importlib\nimportlib.import_module(f'labeler.commands.{x}')\n",
            "labeler.core.plan",
            "higher layer commands",
        ),
    ],
)
def test_the_check_catches_each_kind_of_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, importer: str, why: str
) -> None:
    # Written into a copy of the tree's shape, so relative imports resolve as they would.
    fake_root = tmp_path / "labeler"
    parts = importer.split(".")[1:]
    target = fake_root.joinpath(*parts[:-1], parts[-1] + ".py")
    target.parent.mkdir(parents=True)
    target.write_text(source)
    monkeypatch.setattr(f"{__name__}.ROOT", fake_root)
    reasons = [violation(importer, name) for _, name in project_imports(target)]
    assert any(r and why in r for r in reasons), reasons


def test_a_module_may_import_its_own_unit_and_lower_layers() -> None:
    assert violation("labeler.sim.kueue.tree", "labeler.sim.common.cluster") is None
    assert violation("labeler.commands.map", "labeler.topomap.model") is None
    assert violation("labeler.kube.nodes", "labeler.core.plan") is None
    assert violation("labeler.cli", "labeler.commands") is None
    assert violation("labeler.core.plan", "kubernetes") is None
