"""How fast bulk writes go (``apply``, ``delete`` and the MindCluster twin). The defaults
here are the only ones: the commands' flags and their ``--help`` read them. Light on
purpose: the command line imports it to build its parser."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pace:
    """``concurrency``: nodes patched at once. ``qps``: a client-side limit of patches per
    second (0: none; the server's 429s are always honoured)."""

    concurrency: int = 16
    qps: float = 0.0
