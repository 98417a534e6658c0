"""A fake ``nvidia-smi`` for tests: a script that prints what ``nvidia-smi.json`` beside it
says (CSV lines, an exit code, a sleep), and logs its arguments. Tests put its directory
first on PATH or pass it as ``--nvidia-smi``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

SCRIPT = r"""
import json, sys, time
from pathlib import Path

spec = json.loads(Path(__file__).with_name("nvidia-smi.json").read_text())
with open(spec["log"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
time.sleep(spec["sleep"])
sys.stdout.write(spec["stdout"] * spec["repeat"])
sys.stderr.write(spec["stderr"])
sys.exit(spec["code"])
"""

# A GB200 NVL72 tray: four GPUs on one fabric, as nvidia-smi prints them.
UUID = "A1B2C3D4-0000-4000-8000-00000000ABCD"
TRAY = "".join(f"{UUID}, 32766\n" for _ in range(4))


class FakeNvidiaSmi:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "nvidia-smi"
        self.path.write_text(f"#!{sys.executable}\n" + SCRIPT, encoding="utf-8")
        self.path.chmod(0o755)
        self.log = self.dir / "calls.log"
        self.set()

    def set(
        self,
        stdout: str = TRAY,
        *,
        code: int = 0,
        stderr: str = "",
        sleep: float = 0.0,
        repeat: int = 1,
    ) -> FakeNvidiaSmi:
        spec = {
            "stdout": stdout,
            "code": code,
            "stderr": stderr,
            "sleep": sleep,
            "repeat": repeat,
            "log": str(self.log),
        }
        (self.dir / "nvidia-smi.json").write_text(json.dumps(spec), encoding="utf-8")
        return self

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """An environment whose PATH finds this nvidia-smi first."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = f"{self.dir}{os.pathsep}{env.get('PATH', '')}"
        return env
