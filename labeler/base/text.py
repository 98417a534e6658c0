"""Plain-text pieces every report uses: column tables and capped lists of names.

One spelling for each, so that every command's tables line up the same way and every
"a, b and 3 more" reads alike.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

_DIGITS = re.compile(r"(\d+)")


def table(
    rows: Sequence[Sequence[str]], *, right: Collection[int] = (), indent: str = ""
) -> list[str]:
    """Rows as aligned columns two spaces apart (the first row is usually the header).

    Columns whose index is in ``right`` are right-aligned (counts); trailing blanks are
    stripped so that lines compare cleanly in tests and diffs.
    """
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append(indent + "  ".join(cells).rstrip())
    return out


def natural_key(text: str) -> tuple[tuple[str | int, ...], str]:
    """Sort key that orders the numbers inside names by value: ``lb-2`` before ``lb-10``,
    ``gpu-9`` before ``gpu-10``. Text and numbers alternate (text first), so two keys
    always compare like with like; the text itself breaks ties (``lb-02`` / ``lb-2``)."""
    parts = _DIGITS.split(text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def a_few(names: Sequence[str], limit: int) -> str:
    """``a, b, c and 7 more``: enough names to act on, not a wall of them."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def left_out(total: int, limit: int, hint: str = "use -o json for all") -> list[str]:
    """The line that closes a capped, indented list: how many were not shown, and where
    to see them; no line when nothing was left out."""
    return [f"  … and {total - limit} more ({hint})"] if total > limit else []
