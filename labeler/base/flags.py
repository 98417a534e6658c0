"""argparse value types shared by commands and sources: a bad value exits 2 with a
one-line message naming the flag, like every other usage error."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from enum import StrEnum
from typing import TypedDict, TypeVar

E = TypeVar("E", bound=StrEnum)
N = TypeVar("N", int, float)

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# Patterns, not compiled ones: re compiles (and caches) them when a duration is given, not
# on every start of the command line.
_DURATION = r"(?:\d+(?:\.\d*)?(?:ms|s|m|h))+"
_PART = r"(\d+(?:\.\d*)?)(ms|s|m|h)"


class EnumFlag(TypedDict):
    """``type=`` and ``choices=`` of a flag whose value names a member of an enum."""

    type: Callable[[str], StrEnum]
    choices: tuple[StrEnum, ...]


def enum_flag(kind: type[E]) -> EnumFlag:
    """A flag that takes a member of the enum ``kind`` by its value (``add_argument(...,
    **enum_flag(kind))``): ``--help`` lists the members, and any other text exits 2 naming
    them."""

    def parse(text: str) -> E:
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(kind)}") from None

    parse.__name__ = kind.__name__
    return {"type": parse, "choices": tuple(kind)}


def _number(text: str, kind: Callable[[str], N], what: str) -> N:
    """``kind(text)``; text it cannot read is a usage error saying it is not ``what``."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive_number(text: str) -> float:
    value = _number(text, float, "a number")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number")
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
