"""The names of ``generate``'s outputs, apart from the code that builds them: the command
line's defaults need only these, and importing the builders (and PyYAML) would slow down
every command's start-up."""

from __future__ import annotations

KUEUE = "kueue"
VOLCANO = "volcano"
HYPERNODES = "hypernodes"
DISCOVERY = "discovery"
SLURM = "slurm"
KINDS = (KUEUE, VOLCANO, HYPERNODES, DISCOVERY)  # the default
ALL_KINDS = (*KINDS, SLURM)
