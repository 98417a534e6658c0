"""The agent's topology sources, and the one a profile names (``profile.source``).

A source plugs in by adding its ``SourceKind`` to ``KINDS``: its flag group then appears in
``agent --help`` and a profile whose ``source`` names it gets it, built from its settings.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from labeler.base.errors import UsageError
from labeler.core.profiles import Profile
from labeler.sources import Settings, Source, SourceKind, ascend, azure, gce, nvlink, oci_imds

KINDS: tuple[SourceKind, ...] = (oci_imds.KIND, ascend.KIND, gce.KIND, azure.KIND, nvlink.KIND)
SOURCES = {kind.name: kind for kind in KINDS}


def make_source(
    profile: Profile,
    settings: Mapping[str, Settings] | None = None,
    stop: threading.Event | None = None,
) -> Source:
    """The source ``profile`` names; ``settings``: each source's own settings by source
    name (what is not set takes the source's defaults). Checks here, before any API call,
    that the profile can take the source's roles (a UsageError otherwise)."""
    stop = stop or threading.Event()
    settings = settings or {}
    single = len(profile.sources) == 1
    parts = [
        (profile if single else profile.part(name), _kind(profile, name))
        for name in profile.sources
    ]
    built = [(part, kind.build(part, settings.get(kind.name, {}), stop)) for part, kind in parts]
    if len(built) == 1:
        source = built[0][1]
    else:
        from labeler.sources.compose import ComposedSource

        for part, src in built:
            part.keys_for(src.roles)
        source = ComposedSource(profile, built)
    profile.keys_for(source.roles)
    return source


def _kind(profile: Profile, name: str) -> SourceKind:
    kind = SOURCES.get(name)
    if kind is None:
        raise UsageError(
            f"profile {profile.name!r} uses source {name!r}, which the agent cannot "
            f"read; agent sources: {', '.join(sorted(SOURCES))}"
        )
    return kind
