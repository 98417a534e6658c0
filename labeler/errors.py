"""Typed errors. Each message says what is wrong and what to do about it."""

from __future__ import annotations


class LabelerError(Exception):
    """Base of every error the CLI reports without a traceback."""

    exit_code = 1


class UsageError(LabelerError):
    """Bad flags or arguments (exit 2, like argparse)."""

    exit_code = 2


class InputError(LabelerError):
    """A file or value given by the user is invalid; the message lists every problem."""

    def __init__(self, problems: list[str] | str, *, heading: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        text = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{heading}\n{text}" if heading else "\n".join(self.problems))


def yaml_problem(origin: str, exc: BaseException) -> str:
    """``origin:line:column: problem`` from a PyYAML error, on one line.

    PyYAML's own message spans several lines with a caret drawing; the CLI prints every
    error as one line naming the file and the place, like the CSV validator does.
    """
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    if mark is None:
        return f"{origin}: {problem}"
    return f"{origin}:{mark.line + 1}:{mark.column + 1}: {problem}"
