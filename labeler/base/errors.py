"""Typed errors. Each message says what is wrong and what to do about it."""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    """Every exit code of every command (and of the MindCluster twins)."""

    OK = 0
    ERROR = 1  # invalid input, cluster or API failure; nothing half-done is hidden
    USAGE = 2  # a bad or conflicting flag value, whichever parser caught it
    INCOMPLETE = 3  # done, but conflicts were left, nodes are not fully labeled, no fit
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)
    TERMINATED = 143  # SIGTERM (128 + 15), where a command turns it into Terminated


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be so that the same clean-up and report run."""


class LabelerError(Exception):
    """Base of every error the CLI reports without a traceback."""

    exit_code = Exit.ERROR


class UsageError(LabelerError):
    """Bad flags or arguments (exit 2, like argparse)."""

    exit_code = Exit.USAGE


class InputError(LabelerError):
    """A file or value given by the user is invalid; the message lists every problem."""

    def __init__(self, problems: list[str] | str, *, heading: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.heading = heading
        text = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{heading}\n{text}" if heading else "\n".join(self.problems))


class FlagValuesError(InputError):
    """Flag values found wrong after parsing, every problem listed (exit 2, like argparse)."""

    exit_code = Exit.USAGE


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


def one_line(e: InputError) -> str:
    """An InputError's heading and problems on one line (for flag values)."""
    text = "; ".join(e.problems)
    return f"{e.heading.rstrip(':')}: {text}" if e.heading else text
