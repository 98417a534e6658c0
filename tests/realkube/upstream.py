"""Upstream CRDs and admission policies, read from the released Go modules of Kueue and
Volcano (the Go module proxy serves them with their ``config/`` folders), so that the
objects ``generate`` writes meet the real schemas and CEL rules of a release."""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path

# The releases whose CRDs the emitted objects are checked against.
KUEUE = ("sigs.k8s.io/kueue", "v0.19.2")
VOLCANO = ("volcano.sh/volcano", "v1.15.0")


@cache
def module_dir(module: str, version: str) -> Path:
    """The module's folder in Go's module cache, downloaded through the proxy if needed."""
    done = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd="/",
    )
    info = json.loads(done.stdout or "{}")
    if done.returncode != 0 or "Dir" not in info:
        why = info.get("Error") or done.stderr
        raise RuntimeError(f"the Go module proxy did not serve {module}@{version}: {why}")
    return Path(info["Dir"])


def kueue_crds() -> list[Path]:
    bases = module_dir(*KUEUE) / "config" / "components" / "crd" / "bases"
    return [
        bases / f"kueue.x-k8s.io_{kind}.yaml"
        for kind in ("topologies", "resourceflavors", "clusterqueues", "localqueues", "workloads")
    ]


def volcano_crds() -> list[Path]:
    bases = module_dir(*VOLCANO) / "config" / "crd" / "volcano" / "bases"
    names = ("topology.volcano.sh_hypernodes", "scheduling.volcano.sh_podgroups",
             "scheduling.volcano.sh_queues", "batch.volcano.sh_jobs")  # fmt: skip
    return [bases / f"{name}.yaml" for name in names]


def hypernode_policy() -> str:
    """Volcano's ValidatingAdmissionPolicy for HyperNodes and its binding, as its chart
    installs them."""
    chart = module_dir(*VOLCANO) / "installer" / "helm" / "chart" / "volcano"
    return (chart / "policy" / "hypernodes-validating.yaml").read_text()
