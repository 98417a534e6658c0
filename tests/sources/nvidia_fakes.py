"""A fake ``nvidia-smi`` for tests: a script that answers from ``nvidia-smi.json`` beside it
and logs its arguments. Tests put its directory first on PATH or pass it as
``--nvidia-smi``.

As the real one, it answers ``--query-gpu=<fields> --format=csv,noheader`` with one line per
GPU holding the asked fields in the asked order, ``, ``-separated, and refuses a field it
does not know (``Field "x" is not a valid field to query.``, exit 2, as the drivers before
the fabric fields refuse them). The GPUs are a list of field → value; ``set(stdout=…)``
prints exactly that instead (answers of another shape)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.sources.fake_program import FakeProgram

SCRIPT = r"""
import json, sys, time
from pathlib import Path

spec = json.loads(Path(__file__).with_name("nvidia-smi.json").read_text())
with open(spec["log"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
time.sleep(spec["sleep"])
out = spec["stdout"]
if out is None:
    asked = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--query-gpu=")]
    fields = asked[0].split(",") if asked else []
    for name in fields:
        if name not in spec["known"]:
            print(f'Field "{name}" is not a valid field to query.')
            sys.exit(2)
    out = "".join(", ".join(gpu[name] for name in fields) + "\n" for gpu in spec["gpus"])
sys.stdout.write(out * spec["repeat"])
sys.stderr.write(spec["stderr"])
sys.exit(spec["code"])
"""

FABRIC_FIELDS = ("fabric.clusterUuid", "fabric.cliqueId", "fabric.state", "fabric.status")
# A GB200 NVL72 tray: four GPUs registered on one fabric, clique 32766.
UUID = "A1B2C3D4-0000-4000-8000-00000000ABCD"
NO_FABRIC = {f: "[N/A]" for f in FABRIC_FIELDS}  # a GPU without NVLink fabric (H100 PCIe)


def gpu(
    uuid: str = UUID, clique: str = "32766", state: str = "Completed", status: str = "Success"
) -> dict[str, str]:
    return dict(zip(FABRIC_FIELDS, (uuid, clique, state, status), strict=True))


TRAY = [gpu() for _ in range(4)]
TRAY_TEXT = "".join(f"{UUID}, 32766, Completed, Success\n" for _ in range(4))


class FakeNvidiaSmi(FakeProgram):
    def __init__(self, directory: Path, known: Sequence[str] = FABRIC_FIELDS) -> None:
        super().__init__(directory, "nvidia-smi", SCRIPT)
        self.known = tuple(known)  # the fields this driver's nvidia-smi can be asked
        self.set()

    def set(
        self,
        gpus: Sequence[Mapping[str, str]] = TRAY,
        *,
        stdout: str | None = None,
        code: int = 0,
        stderr: str = "",
        sleep: float = 0.0,
        repeat: int = 1,
    ) -> FakeNvidiaSmi:
        self.write_spec(
            {
                "gpus": [dict(g) for g in gpus],
                "known": list(self.known),
                "stdout": stdout,
                "code": code,
                "stderr": stderr,
                "sleep": sleep,
                "repeat": repeat,
            }
        )
        return self
