"""The kube-scheduler oracle's binaries: the real control plane's (etcd, kube-apiserver,
kube-scheduler, KWOK), which ``scripts/control-plane.sh build`` makes from the Go module
proxy into ``.cache/control-plane/<version>/bin``. There is no Go module of the oracle's
own: the scheduler is the released binary, driven through its API server."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "control-plane.sh"
NEEDED = ("etcd", "kube-apiserver", "kube-scheduler", "kwok")


class MissingGo(RuntimeError):
    """The binaries are not built and Go is not there to build them."""


def script_version() -> str:
    """The Kubernetes release ``scripts/control-plane.sh`` builds."""
    found = re.search(r"^K8S_VERSION=(v[0-9.]+)$", SCRIPT.read_text(), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"{SCRIPT}: no K8S_VERSION=vX.Y.Z line")
    return found.group(1)


def control_plane_bin() -> Path:
    """The folder of the binaries, built first when one is missing (a second call with
    the binaries there only reads the folder's name)."""
    out = subprocess.run([str(SCRIPT), "bin"], capture_output=True, text=True, check=True)
    bin_dir = Path(out.stdout.strip())
    if all((bin_dir / name).exists() for name in NEEDED):
        return bin_dir
    if shutil.which("go") is None:
        raise MissingGo(
            "the control plane is not built and Go is not installed; run "
            "`scripts/control-plane.sh build` (needs Go >= 1.26 and the Go module proxy)"
        )
    done = subprocess.run([str(SCRIPT), "build"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/control-plane.sh build failed:\n{done.stderr[-4000:]}")
    return bin_dir
