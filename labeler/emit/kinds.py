"""The names of ``generate``'s outputs, apart from the code that builds them: the command
line's defaults need only these, and importing the builders (and PyYAML) would slow down
every command's start-up."""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """An output of ``generate`` (``--emit``), in the order they are built."""

    KUEUE = "kueue"
    VOLCANO = "volcano"
    HYPERNODES = "hypernodes"
    DISCOVERY = "discovery"
    SLURM = "slurm"


DEFAULT_KINDS = (Kind.KUEUE, Kind.VOLCANO, Kind.HYPERNODES, Kind.DISCOVERY)
