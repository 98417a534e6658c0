"""Output files are written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labeler.base.errors import InputError
from labeler.base.files import write_atomic


def test_a_new_file_gets_the_usual_mode_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "out.yaml", "a: 1\n")
    finally:
        os.umask(old)
    assert (tmp_path / "out.yaml").read_text() == "a: 1\n"
    assert (tmp_path / "out.yaml").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.yaml"]


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("old\n")
    path.chmod(0o600)
    write_atomic(path, "new\r\n")
    assert path.read_bytes() == b"new\r\n"  # newlines as given
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "out.csv"
    path.write_text("whole\n")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(InputError, match=r"out\.csv: cannot write: No space left on device"):
        write_atomic(path, "half")
    assert path.read_text() == "whole\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"check that .*nope exists"):
        write_atomic(tmp_path / "nope" / "x.csv", "")
