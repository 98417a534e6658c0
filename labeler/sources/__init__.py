"""Topology sources: where a node learns its own place. Sources read; they never write.

A source answers one of three ways:
- a ``Reading`` (label key → full source ID, before encoding),
- ``NoData`` (a definite, normal "this node has no topology", e.g. IMDS 404), or
- raises ``SourceError`` (timeout, refused, garbage): the agent keeps the last labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from labeler.errors import LabelerError


@dataclass(frozen=True)
class Reading:
    ids: Mapping[str, str]
    details: Mapping[str, str] = field(default_factory=dict)  # for logs and events


@dataclass(frozen=True)
class NoData:
    reason: str


class SourceError(LabelerError):
    """The source could not be read; says why and what to check."""


class Source(Protocol):
    """``keys``: every label key this source can produce, i.e. the agent's scope: an owned
    key in scope that a new reading lacks is removed; keys outside it are never touched."""

    name: str
    keys: tuple[str, ...]

    def read(self) -> Reading | NoData: ...
