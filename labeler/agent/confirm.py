"""Confirming a change of topology before it is written (pure, no I/O).

A metadata service that answers one read from another document (``rdmaTopologyData``
missing once, ``/host`` answering) or with other IDs would otherwise rewrite every level
label, and rewrite them back on the next read: the labels flap, and a scheduler may place
a job on the flapped values meanwhile. So a reading whose *where* (the source document kind)
or level IDs differ from the ones the labels were written from is applied only once
``needed`` reads in a row agree on it. A first labeling (nothing known yet) and a reading
that agrees with the labels need no confirmation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from labeler.sources import Reading


@dataclass(frozen=True)
class Signature:
    """What must not change unconfirmed: the source's kind (None: not known, e.g. read back
    from a node's annotation) and the level IDs by role."""

    kind: str | None
    levels: tuple[tuple[str, str], ...]

    def agrees(self, other: Signature) -> bool:
        if self.kind is not None and other.kind is not None and self.kind != other.kind:
            return False
        return self.levels == other.levels


def signature(reading: Reading, level_roles: tuple[str, ...]) -> Signature:
    levels = tuple((r, reading.ids[r]) for r in level_roles if r in reading.ids)
    return Signature(reading.details.get("source"), levels)


def recorded_signature(
    source_ids: Mapping[str, str], keys: Mapping[str, str], level_roles: tuple[str, ...]
) -> Signature | None:
    """The level IDs a node's labels were written from (its source-ids annotation), or
    None when it records none (a node never labeled by us)."""
    levels = tuple((r, source_ids[keys[r]]) for r in level_roles if keys.get(r) in source_ids)
    return Signature(None, levels) if levels else None


class Confirmation:
    """Counts consecutive reads of one changed signature. Not thread-safe (the loop's)."""

    def __init__(self, needed: int) -> None:
        self.needed = needed
        self._pending: Signature | None = None
        self._count = 0

    def offer(self, baseline: Signature | None, candidate: Signature) -> bool:
        """True when ``candidate`` may be written: no baseline, the same as the baseline,
        or seen ``needed`` reads in a row."""
        if baseline is None or candidate.agrees(baseline) or self.needed <= 1:
            self._pending, self._count = None, 0
            return True
        if self._pending is not None and candidate.agrees(self._pending):
            self._count += 1
        else:
            self._pending, self._count = candidate, 1
        if self._count >= self.needed:
            self._pending, self._count = None, 0
            return True
        return False

    @property
    def pending(self) -> int:
        """Reads of the pending change seen so far (0: none pending)."""
        return self._count
