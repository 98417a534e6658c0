"""Modes travel as types (docs/architecture.md, "Layers and what each may import"): no call
in ``labeler/`` passes ``True`` or ``False`` by position to a function or class that
``labeler/`` defines. A reader of ``fill(domains, 4, True)`` cannot tell what ``True``
means; a keyword (``replaceable=False``) or an enum (``Unit.SLICES``) says it.

Calls to what ``labeler/`` does not define are not ours to rename and are left alone: a
mapping's default (``arguments.get(key, True)``), ``socket.setblocking(False)``. A method
of ours that shares such a name is told apart by its parameters: ``get(self, path)`` takes
no second argument, so ``mapping.get(key, True)`` cannot be a call to it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "labeler"


def _positional(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> float:
    """How many arguments a call passes by position at most (``self``/``cls`` not counted)."""
    if fn.args.vararg is not None:
        return math.inf
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names)


def definitions(trees: Iterable[ast.AST]) -> tuple[set[str], dict[str, float]]:
    """Class names, and per function name the most positional arguments any takes."""
    classes: set[str] = set()
    functions: dict[str, float] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.add(node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[node.name] = max(functions.get(node.name, 0), _positional(node))
    return classes, functions


def bare_flags(
    tree: ast.AST, classes: set[str], functions: dict[str, float]
) -> list[tuple[int, str]]:
    """(line, call) of each call to one of ours with a positional True or False."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        for i, arg in enumerate(node.args):
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, bool)):
                continue
            if name in classes or i < functions.get(name, 0):
                found.append((node.lineno, ast.unparse(node)[:100]))
                break
    return found


def test_no_call_passes_a_bare_true_or_false_to_our_code() -> None:
    paths = sorted(ROOT.rglob("*.py"))
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in paths}
    classes, functions = definitions(trees.values())
    found = [
        f"{p.relative_to(ROOT.parent)}:{line}: {call}"
        for p, tree in trees.items()
        for line, call in bare_flags(tree, classes, functions)
    ]
    assert not found, (
        "bare True/False by position (pass it by keyword, or make the mode an enum):\n  "
        + "\n  ".join(found)
    )


def test_the_check_tells_our_calls_from_others() -> None:
    source = """
class Verdict:
    ok: bool
class Reader:
    def get(self, path): ...
def fill(domains, count, by_slices): ...
fill(d, 4, True)
fill(d, 4, by_slices=True)
Verdict(False)
Verdict(ok=False)
arguments.get("enable", True)
sock.setblocking(False)
"""
    tree = ast.parse(source)
    classes, functions = definitions([tree])
    assert [line for line, _ in bare_flags(tree, classes, functions)] == [7, 9]
