"""What the chart's tests share: run the real helm and kubectl of the control-plane cache,
render the chart and the kustomizations, and compare their objects."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "topology-labeler"
MANIFESTS = ROOT / "manifests"
EXAMPLES = CHART / "examples"
RELEASE = "topology-labeler"
NAMESPACE = "topology-labeler"
# profile value → its kustomization
KUSTOMIZATIONS = {
    "oci": MANIFESTS,
    "ascend": MANIFESTS / "ascend",
    "gce": MANIFESTS / "gce",
    "azure": MANIFESTS / "azure",
}
PROFILES = (*KUSTOMIZATIONS, "custom")
# The labels Helm's conventions add; everything else must be what kustomize gives.
HELM_LABELS = (
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
)


class Helm:
    """The real helm binary, with its own cache and config folders (nothing in $HOME)."""

    def __init__(self, bin_dir: Path, home: Path, kubeconfig: Path | None = None) -> None:
        self.exe = str(bin_dir / "helm")
        self.kubeconfig = kubeconfig
        home.mkdir(parents=True, exist_ok=True)
        self.env = {
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
        }

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cluster = [f"--kubeconfig={self.kubeconfig}"] if self.kubeconfig else []
        done = subprocess.run(
            [self.exe, *args, *cluster],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=300,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done

    def template(self, *values: str, namespace: str = NAMESPACE, release: str = RELEASE) -> str:
        """`helm template` of the chart; `values` are helm's own flags (--set, -f)."""
        return self.run("template", release, str(CHART), "-n", namespace, *values).stdout


def objects(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def kustomize(kubectl: Path, folder: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize FOLDER` with the given (real) kubectl."""
    done = subprocess.run(
        [str(kubectl), "kustomize", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return objects(done.stdout)


def without_helm_labels(doc: dict[str, Any]) -> dict[str, Any]:
    """The object with Helm's own labels taken out of its metadata (nothing else)."""
    doc = copy.deepcopy(doc)
    labels = doc["metadata"].get("labels", {})
    for key in HELM_LABELS:
        labels.pop(key, None)
    if not labels:
        doc["metadata"].pop("labels", None)
    return doc


def by_id(docs: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Objects by (kind, namespace, name); fails on a duplicate."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for doc in docs:
        meta = doc["metadata"]
        key = (doc["kind"], meta.get("namespace", ""), meta["name"])
        assert key not in found, f"{key} twice"
        found[key] = doc
    return found


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Where two objects differ, as paths (`.spec.selector.matchLabels: ... != ...`)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found: list[str] = []
        for key in sorted(set(ours) | set(theirs)):
            if key not in ours or key not in theirs:
                where = "the chart" if key in ours else "kustomize"
                found.append(f"{path}.{key}: only in {where}")
            else:
                found += differences(ours[key], theirs[key], f"{path}.{key}")
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [
            d
            for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    return [] if ours == theirs else [f"{path}: chart {ours!r} != kustomize {theirs!r}"]
