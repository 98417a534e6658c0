"""Fields of objects read from snapshot files, manifests or the API, where a field may be
missing or of another type than the schema says: one lenient reader for maps, one strict
one for counts, for every simulator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labeler.base.errors import InputError


def as_map(raw: Any) -> Mapping[str, Any]:
    """``raw`` if it is a mapping, else an empty one (a missing or malformed section)."""
    return raw if isinstance(raw, Mapping) else {}


def whole(raw: Any, where: str, *, default: int | None = None, minimum: int = 0) -> int:
    """An integer field; ``default`` when absent (None: required)."""
    if raw is None:
        if default is None:
            raise InputError(f"{where}: required")
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError(f"{where}: {raw!r} is not a whole number")
    if raw < minimum:
        raise InputError(f"{where}: {raw} is below {minimum}")
    return raw
