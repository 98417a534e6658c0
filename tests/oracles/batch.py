"""What every oracle's batch shares: a disagreement with the folder that reproduces it, a
batch's outcome, and advise run in this process for its JSON answer."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Disagreement:
    name: str
    kind: str  # the class: what differs
    detail: str
    folder: Path

    def __str__(self) -> str:
        return f"{self.name}: {self.kind}: {self.detail}\n  reproduce: {self.folder}"


@dataclass
class Result:
    """A batch's outcome: how many agreed, each disagreement, and how many of each kind."""

    agree: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)


def run_advise(args: list[str]) -> tuple[int, dict[str, Any] | str]:
    """advise's exit code and JSON answer (or its error text), run in this process."""
    from labeler.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as stop:
            code = int(stop.code or 0)
    if code not in (0, 3):
        return code, err.getvalue().strip() or out.getvalue().strip()
    answer: dict[str, Any] = json.loads(out.getvalue())
    return code, answer
