"""Levels from several sources: one read of each per cycle, merged into one reading.

A profile whose levels name other sources (``Level.source``) gets a ``ComposedSource``: its
roles are the profile's level names in the profile's order (widest first) plus the extra
roles of the profile's own source, so the level order and the nesting checks (``check``,
``audit``, ``generate``) apply across sources exactly as within one.

One read: every part is read in turn. An error in any part is an error for the read (the
labels stay). A part with no data makes its roles unknown (neither written nor removed);
only when every part has no data is the read "no data". A level that is unknown makes
every narrower level unknown too, whichever source it comes from: a narrower ID without its
parent cannot be placed in the tree.
"""

from __future__ import annotations

from collections.abc import Sequence

from labeler.core.profiles import Profile, Roles
from labeler.sources import NO_DATA, NoData, Reading, Source


class ComposedSource:
    def __init__(self, profile: Profile, parts: Sequence[tuple[Profile, Source]]) -> None:
        self._parts = [(part.keys_for(src.roles), src) for part, src in parts]
        self.name = "+".join(src.name for _, src in parts)
        levels = tuple(lv.name for lv in profile.topology.levels)
        own = next(src for part, src in parts if part.source == profile.source)
        self.roles = Roles(
            levels=levels, extras=tuple(r for r in own.roles.extras if r not in levels)
        )

    def read(self) -> Reading | NoData:
        ids: dict[str, str] = {}
        values: dict[str, str] = {}
        unknown: dict[str, str] = {}
        causes: dict[str, str] = {}
        kinds: list[str] = []
        empty: list[str] = []
        for keys, src in self._parts:
            got = src.read()  # a SourceError ends the read: the labels stay
            if isinstance(got, NoData):
                empty.append(f"{src.name}: {got.reason}")
                unknown.update({role: f"{src.name} has no data: {got.reason}" for role in keys})
                causes.update(dict.fromkeys(keys, NO_DATA))
                continue
            ids.update({r: v for r, v in got.ids.items() if r in keys})
            values.update({r: v for r, v in got.values.items() if r in keys})
            unknown.update({r: why for r, why in got.unknown.items() if r in keys})
            causes.update({r: c for r, c in got.causes.items() if r in keys})
            kinds.append(f"{src.name}:{got.details.get('source', '')}")
        if len(empty) == len(self._parts):
            return NoData("; ".join(empty))
        wider = ""
        for role in self.roles.levels:
            if wider:
                ids.pop(role, None)
                values.pop(role, None)
                causes.pop(role, None)
                unknown[role] = f"a wider level is unknown ({wider})"
            elif role in unknown:
                wider = f"{role}: {unknown[role]}"
        details = {"source": ",".join(kinds)}
        return Reading(ids=ids, values=values, unknown=unknown, causes=causes, details=details)
