"""Topology sources: where a node learns its own place. Sources read; they never write.

A source answers one of three ways:
- a ``Reading``: full source IDs by role (island, network block, superpod...), before
  encoding; the profile says which label key each role is written to;
- ``NoData`` (a definite, normal "this node has no topology", e.g. IMDS 404), or
- raises ``SourceError`` (timeout, refused, garbage): the agent keeps the last labels.

Each source module also owns its options: a frozen dataclass holding its defaults, the
command-line flags that set them, and a ``SourceKind`` that the agent command registers
(``labeler.sources.select``). A new source is one more module of that shape.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from labeler.base.errors import LabelerError
from labeler.core.profiles import Profile, Roles


@dataclass(frozen=True)
class Reading:
    """``ids``: role → full source ID, encoded by the profile's encoding. ``values``: role →
    a value written as it is (a count, a flag: nothing to encode). ``unknown``: role → why
    this read could not tell it; such a role's label is neither written nor removed (an
    unknown level is an error for the reconcile, an unknown extra is only logged)."""

    ids: Mapping[str, str]
    details: Mapping[str, str] = field(default_factory=dict)  # for logs and events
    values: Mapping[str, str] = field(default_factory=dict)
    unknown: Mapping[str, str] = field(default_factory=dict)


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


@dataclass(frozen=True)
class SourceKind:
    """A source as the agent command sees it. ``name`` is what a profile's ``source``
    says; ``add_flags`` adds the source's flag group; ``build`` makes the source from the
    parsed flags, and waits on the stop event so that its retries end on SIGTERM."""

    name: str
    add_flags: Callable[[argparse.ArgumentParser], None]
    build: Callable[[Profile, argparse.Namespace, threading.Event], Source]


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
