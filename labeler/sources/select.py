"""The agent's topology sources, and the one a profile names (``profile.source``).

A source plugs in by adding its ``SourceKind`` to ``KINDS``: its flags then appear in
``agent --help`` and a profile whose ``source`` names it gets it.
"""

from __future__ import annotations

import argparse
import threading

from labeler.errors import UsageError
from labeler.profiles import Profile
from labeler.sources import Source, SourceKind, ascend, azure, gce, nvlink, oci_imds

KINDS: tuple[SourceKind, ...] = (oci_imds.KIND, ascend.KIND, gce.KIND, azure.KIND, nvlink.KIND)
SOURCES = {kind.name: kind for kind in KINDS}


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Every source's flag group."""
    for kind in KINDS:
        kind.add_flags(parser)


def make_source(
    profile: Profile, args: argparse.Namespace, stop: threading.Event | None = None
) -> Source:
    """The source ``profile`` names, from the parsed flags. Checks here, before any API
    call, that the profile can take the source's roles (a UsageError otherwise)."""
    kind = SOURCES.get(profile.source)
    if kind is None:
        raise UsageError(
            f"profile {profile.name!r} uses source {profile.source!r}, which the agent cannot "
            f"read; agent sources: {', '.join(sorted(SOURCES))}"
        )
    source = kind.build(profile, args, stop or threading.Event())
    profile.keys_for(source.roles)
    return source
