"""Reading input files with a size cap; writing output files whole or not at all.

Every input file is read through :func:`read_bytes` / :func:`read_text` with a cap far
above any real file of its kind, so a wrong path (``/dev/zero``, a disk image, a log)
is a one-line error instead of a process that eats all memory.

Every file a command writes (generated manifests, exported or converted CSVs, a merged
ConfigMap) goes through :func:`write_atomic`, so an interrupted or failing run never leaves
a half-written file where a complete one was, and ``kubectl apply -f`` or the label tool
never reads a truncated one.
"""

from __future__ import annotations

import os
from pathlib import Path

from labeler.base.errors import InputError


def size_text(n: int) -> str:
    """``64 MiB``, ``1 KiB``: a cap as people write it."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def read_bytes(path: str | Path, limit: int, *, what: str = "file") -> bytes:
    """The file's bytes, or InputError when it cannot be read or holds more than
    ``limit`` bytes (read in one go up to the cap: a device or a pipe has no size)."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputError(f"{path}: cannot read {what}: {e.strerror or e}") from e
    if len(data) > limit:
        raise InputError(
            f"{path}: larger than {size_text(limit)}, far more than any {what}; check the path"
        )
    return data


def read_text(path: str | Path, limit: int, *, what: str = "file") -> str:
    """:func:`read_bytes` decoded as UTF-8 (a byte-order mark is dropped)."""
    data = read_bytes(path, limit, what=what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: {what} is not UTF-8 text ({e.reason})") from e


def _new_file_mode() -> int:
    """The mode ``open(path, "w")`` would give a new file (0666 less the umask); mkstemp
    alone would leave 0600, which surprises whoever reads the output next."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _new_temp_file(path: Path) -> tuple[int, str]:
    """A file beside ``path`` that this call alone created (0600): what tempfile.mkstemp
    gives, without importing tempfile, which loads random and hashlib (a few ms of every
    command that writes a file)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, flags, 0o600), str(tmp)
        except FileExistsError:
            continue  # another writer's name: draw again
    raise FileExistsError(f"no free temporary name beside {path}")


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` in one step.

    The text goes to a temporary file in the same directory, is flushed to disk, then
    renamed over ``path``; an existing file keeps its permissions. Errors name the path
    and what to check (exit 1).
    """
    path = Path(path)
    try:
        fd, tmp = _new_temp_file(path)
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
