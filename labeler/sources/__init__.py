"""Topology sources: where a node learns its own place. Sources read; they never write.

A source answers one of three ways:
- a ``Reading``: full source IDs by role (island, network block, superpod...), before
  encoding; the profile says which label key each role is written to;
- ``NoData`` (a definite, normal "this node has no topology", e.g. IMDS 404), or
- raises ``SourceError`` (timeout, refused, garbage): the agent keeps the last labels.

Each source module owns its settings: a frozen dataclass of options whose defaults are the
only defaults, the flags that set its fields (declared as data, ``Flag``; the agent command
turns them into argparse options), and a ``SourceKind`` that ``labeler.sources.select``
registers. A source is built from a mapping of its own settings (field → value, from its
flag group or any other caller), never from a parsed command line. A new source is one
more module of that shape.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from labeler.base.errors import LabelerError, UsageError
from labeler.core.profiles import Profile, Roles

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


# Causes of an unknown role (``Reading.causes``) that every source may give.
MISSING = "missing"  # the source did not publish the value
WIDER_UNKNOWN = "wider-unknown"  # a wider level is unknown, so this one cannot be placed
NO_DATA = "no-data"  # a source of a composed profile has no data for its levels


@dataclass(frozen=True)
class Reading:
    """``ids``: role → full source ID, encoded by the profile's encoding. ``values``: role →
    a value written as it is (a count, a flag: nothing to encode). ``unknown``: role → why
    this read could not tell it; such a role's label is neither written nor removed (an
    unknown level is an error for the reconcile, an unknown extra is only logged).
    ``causes``: role → a short code for why (a metric label value, ``fabric-pending``…);
    without one, an unknown role is ``wider-unknown`` under an unknown level, else
    ``missing``."""

    ids: Mapping[str, str]
    details: Mapping[str, str] = field(default_factory=dict)  # for logs and events
    values: Mapping[str, str] = field(default_factory=dict)
    unknown: Mapping[str, str] = field(default_factory=dict)
    causes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NoData:
    reason: str


class SourceError(LabelerError):
    """The source could not be read; says why and what to check."""


class Source(Protocol):
    """``roles``: every role this source can report. The label keys the profile gives them
    are the agent's scope: an owned key in scope that a new reading lacks is removed; keys
    outside it are never touched."""

    name: str
    roles: Roles

    def read(self) -> Reading | NoData: ...


Settings = Mapping[str, Any]  # one source's settings: option field → value
T = TypeVar("T", bound="DataclassInstance")


@dataclass(frozen=True)
class Flag:
    """A command-line flag of a source: ``name VALUE`` sets the option ``field``; its
    default is that field's default in the source's options."""

    name: str
    field: str
    help: str
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SourceKind:
    """A source as the agent sees it. ``name`` is what a profile's ``source`` says;
    ``title`` heads its flag group in ``agent --help``; ``defaults`` are its options as
    they are when nothing sets them; ``build`` makes the source for a profile from its
    settings, and waits on the stop event so that its retries end on SIGTERM."""

    name: str
    title: str
    defaults: Any
    flags: tuple[Flag, ...]
    build: Callable[[Profile, Settings, threading.Event], Source]


def options(defaults: T, settings: Settings, source: str) -> T:
    """``defaults`` (a source's options dataclass) with the fields ``settings`` sets."""
    known = {f.name for f in dataclasses.fields(defaults)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise UsageError(
            f"source {source} has no setting {', '.join(unknown)}; its settings: "
            + ", ".join(sorted(known))
        )
    return dataclasses.replace(defaults, **settings)


def nested_levels(
    levels: tuple[str, ...], found: Mapping[str, str], missing: Callable[[str], str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The level IDs of ``found``, widest first, and the unknown ones: a missing level
    (``missing(role)`` says why) makes it and every narrower level unknown, since a
    narrower ID without its parent cannot be placed in the tree."""
    ids: dict[str, str] = {}
    unknown: dict[str, str] = {}
    for role in levels:
        if unknown:
            unknown[role] = f"a wider level is unknown ({next(iter(unknown.values()))})"
        elif role in found:
            ids[role] = found[role]
        else:
            unknown[role] = missing(role)
    return ids, unknown
