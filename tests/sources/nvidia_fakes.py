"""A fake ``nvidia-smi`` for tests: a script that prints what ``nvidia-smi.json`` beside it
says (CSV lines, an exit code, a sleep), and logs its arguments. Tests put its directory
first on PATH or pass it as ``--nvidia-smi``."""

from __future__ import annotations

from pathlib import Path

from tests.sources.fake_program import FakeProgram

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


class FakeNvidiaSmi(FakeProgram):
    def __init__(self, directory: Path) -> None:
        super().__init__(directory, "nvidia-smi", SCRIPT)
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
        self.write_spec(
            {"stdout": stdout, "code": code, "stderr": stderr, "sleep": sleep, "repeat": repeat}
        )
        return self
