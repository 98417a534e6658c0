"""Fixtures for the command-line tests."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def twin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Result]:
    """A twin's main() in-process; ``stdin`` answers its prompts."""

    def call(
        fn: Callable[[list[str]], int], *args: str, kubeconfig: Path | None = None, stdin: str = ""
    ) -> Result:
        if kubeconfig is not None:
            monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = fn(list(args))
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return call
