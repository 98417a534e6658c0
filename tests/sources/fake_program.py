"""A fake command-line tool on disk: a Python script that answers from a JSON spec beside
it and logs its arguments. ``npu-smi`` and ``nvidia-smi`` fakes build on it; tests put its
directory first on PATH (``env()``) or pass its ``path``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class FakeProgram:
    def __init__(self, directory: Path, name: str, script: str) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / name
        self.path.write_text(f"#!{sys.executable}\n" + script, encoding="utf-8")
        self.path.chmod(0o755)
        self.log = self.dir / "calls.log"

    def write_spec(self, spec: Mapping[str, Any]) -> None:
        """What the script answers from now on (``<name>.json``; it logs to ``spec['log']``)."""
        (self.dir / f"{self.path.name}.json").write_text(
            json.dumps({**spec, "log": str(self.log)}), encoding="utf-8"
        )

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """An environment whose PATH finds this program first."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = f"{self.dir}{os.pathsep}{env.get('PATH', '')}"
        return env
