"""Build the Kueue oracle (the Go module in go/) into .cache/oracles/kueue-<version>/.

The binary is keyed by the Kueue release it imports and by a digest of our own Go files,
so a second build with the binary present costs one hash of a few small files. Go's module
and build caches stay where Go keeps them, outside the repository.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

# The Kueue release the oracle imports; go/go.mod requires the same and go/main.go names
# it (KueueVersion). tests/oracles/kueue/test_versions.py checks the three agree.
KUEUE_VERSION = "v0.19.2"

HERE = Path(__file__).resolve().parent
GO_DIR = HERE / "go"
ROOT = HERE.parents[2]


class BuildError(RuntimeError):
    """The oracle could not be built; the message says why (Go's own words included)."""


def folder() -> Path:
    return ROOT / ".cache" / "oracles" / f"kueue-{KUEUE_VERSION}"


def _digest() -> str:
    h = hashlib.sha256()
    for path in sorted(GO_DIR.iterdir()):
        if path.suffix in (".go", ".mod", ".sum"):
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def binary() -> Path:
    return folder() / f"kueue-oracle-{_digest()}"


def have_go() -> bool:
    return shutil.which("go") is not None


def build() -> Path:
    """The oracle's path, built first if it is not there yet."""
    out = binary()
    if out.exists():
        return out
    if not have_go():
        raise BuildError(
            "Go is not installed: the Kueue oracle is built from sigs.k8s.io/kueue@"
            f"{KUEUE_VERSION} through the Go module proxy (Go >= 1.26 is needed)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    env = dict(os.environ, GOFLAGS="-buildvcs=false -mod=readonly")
    # exclude_scheduler_library: Kueue's optional scheduler-library simulator (and with it
    # k8s.io/kubernetes) stays out of the build; the oracle does not use it.
    cmd = ["go", "build", "-tags", "exclude_scheduler_library", "-trimpath", "-o", str(tmp), "."]
    done = subprocess.run(cmd, cwd=GO_DIR, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(
            f"building the Kueue oracle (sigs.k8s.io/kueue@{KUEUE_VERSION}) failed; Go says "
            f"(a module the proxy refused is named with its version):\n{done.stderr.strip()}"
        )
    for old in out.parent.glob("kueue-oracle-*"):
        if old != tmp:
            old.unlink()  # an older build of other Go sources
    tmp.rename(out)
    return out
