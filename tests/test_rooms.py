"""Rooms a newcomer can read (docs/architecture.md, "Layers"): no module in ``labeler/``
over 500 lines and no function over 80.

A function is counted from its first decorator to its last line, docstring and comments
included, and every function counts: methods, nested functions, ``async def``. There is
no exceptions list; a room that grows past the limit is split along its steps instead.
Each test lists every offender, so one run shows all that needs splitting.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "labeler"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def function_lengths(source: str, filename: str = "<source>") -> Iterator[tuple[int, str, int]]:
    """(first line, qualified name, lines) of every function in ``source``."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[int, str, int]]:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                last = child.end_lineno or child.lineno
                name = f"{prefix}{child.name}"
                yield first, name, last - first + 1
                name += "."
            elif isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}."
            yield from walk(child, name)

    yield from walk(ast.parse(source, filename), "")


def where(path: Path) -> str:
    return str(path.relative_to(ROOT.parent))


def test_no_module_over_the_limit() -> None:
    over = [
        f"{where(p)}: {n} lines"
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not over, (
        f"modules over {MAX_MODULE_LINES} lines (split them by concern):\n  " + "\n  ".join(over)
    )


def test_no_function_over_the_limit() -> None:
    over = [
        f"{where(p)}:{line}: {name}() is {n} lines"
        for p in modules()
        for line, name, n in function_lengths(p.read_text(encoding="utf-8"), str(p))
        if n > MAX_FUNCTION_LINES
    ]
    assert not over, (
        f"functions over {MAX_FUNCTION_LINES} lines, from the first decorator to the last line "
        "(split them along their steps):\n  " + "\n  ".join(over)
    )


def test_a_function_is_counted_from_its_first_decorator_to_its_last_line() -> None:
    source = "\n".join(
        [
            "import functools",  # 1
            "class Outer:",  # 2
            "    @staticmethod",  # 3
            "    @functools.cache",  # 4
            "    def method():",  # 5
            "        def inner():",  # 6
            "            return 1",  # 7
            "",  # 8
            "        return inner()",  # 9
            "async def top():",  # 10
            "    pass",  # 11
        ]
    )
    assert list(function_lengths(source)) == [
        (3, "Outer.method", 7),
        (6, "Outer.method.inner", 2),
        (10, "top", 2),
    ]
