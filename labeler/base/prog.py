"""The program's name as the user typed it, for messages that name one of its commands.

The same command line runs as ``topology-labeler`` and as the kubectl plugin ``kubectl
topology``; a hint such as "see 'topology-labeler check'" must name what the user can type
back. ``labeler.cli.main`` records the name once; every message that names a command
builds it with :func:`command`.
"""

from __future__ import annotations

_invoked = "topology-labeler"  # until labeler.cli.main says otherwise (its PROG)


def invoked_as(prog: str) -> None:
    """Record how this process was invoked (``labeler.cli.main`` does, before parsing)."""
    global _invoked
    _invoked = prog


def command(rest: str) -> str:
    """``rest`` (``"check"``, ``"apply/delete"``, ``"generate --profile P"``) as the user
    would type it: ``topology-labeler check`` or ``kubectl topology check``."""
    return f"{_invoked} {rest}"
