"""Writing output files: whole or not at all.

Every file a command writes (generated manifests, exported or converted CSVs, a merged
ConfigMap) goes through :func:`write_atomic`, so an interrupted or failing run never leaves
a half-written file where a complete one was, and ``kubectl apply -f`` or the label tool
never reads a truncated one.
"""

from __future__ import annotations

import os
from pathlib import Path

from labeler.errors import InputError


def _new_file_mode() -> int:
    """The mode ``open(path, "w")`` would give a new file (0666 less the umask); mkstemp
    alone would leave 0600, which surprises whoever reads the output next."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` in one step.

    The text goes to a temporary file in the same directory, is flushed to disk, then
    renamed over ``path``; an existing file keeps its permissions. Errors name the path
    and what to check (exit 1).
    """
    import tempfile  # here: every command imports this module, few of them write files

    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise InputError(
            f"{path}: cannot write: {e.strerror or e}; check that {path.parent} exists "
            "and is writable"
        ) from e
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        mode = path.stat().st_mode & 0o777 if path.exists() else _new_file_mode()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write: {e.strerror or e}") from e
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
