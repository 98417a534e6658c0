"""argparse value types shared by commands and sources: a bad value exits 2 with a
one-line message naming the flag, like every other usage error."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound=StrEnum)

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# Patterns, not compiled ones: re compiles (and caches) them when a duration is given, not
# on every start of the command line.
_DURATION = r"(?:\d+(?:\.\d*)?(?:ms|s|m|h))+"
_PART = r"(\d+(?:\.\d*)?)(ms|s|m|h)"


def one_of(kind: type[E]) -> Callable[[str], E]:
    """The member of the enum ``kind`` whose value is the text; give ``choices=list(kind)``
    too, so that ``--help`` lists them."""

    def parse(text: str) -> E:
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(kind)}") from None

    parse.__name__ = kind.__name__
    return parse


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def duration(text: str) -> float:
    """Seconds in kubectl's ``--request-timeout`` form: a bare number of seconds, or a Go
    duration (``30s``, ``2m``, ``1m30s``, ``500ms``). Unlike kubectl, 0 ("wait for ever")
    is refused: an answer that never comes would hang the run."""
    if re.fullmatch(r"\d+", text):
        seconds = float(text)
    elif re.fullmatch(_DURATION, text):
        seconds = sum(float(n) * _UNITS[u] for n, u in re.findall(_PART, text))
    else:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: use seconds (30) or a unit (30s, 2m, 1m30s)"
        )
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return seconds
