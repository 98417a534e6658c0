"""The README's install commands, exactly as it shows them, against the real API server:
`kubectl apply -k` of the agent's and the exporter's manifests, and `helm install` of the
chart (in a control plane of its own: its objects are the manifests' under the same names,
which Helm would rightly refuse to take over)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.test_readme_examples import readme_commands
from tests.realkube.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[2]


def as_a_user(plane: ControlPlane, argv: list[str], home: Path) -> str:
    """Run ``argv`` from the checkout as a user would: the binaries on PATH, the cluster
    in $KUBECONFIG, Helm's folders under ``home``."""
    env = {
        "PATH": f"{plane.bin}:/usr/bin:/bin",
        "KUBECONFIG": str(plane.kubeconfig),
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_readme_kubectl_apply_commands(real_kube: ControlPlane, tmp_path: Path) -> None:
    shown = readme_commands("kubectl")
    assert shown, "the README shows no kubectl command"
    for argv in shown:
        as_a_user(real_kube, argv, tmp_path)
    kinds = json.loads(real_kube.kubectl("get", "daemonsets,deployments", "-n", "topology-labeler",
                                         "-o", "json").stdout)  # fmt: skip
    assert {i["kind"] for i in kinds["items"]} == {"DaemonSet", "Deployment"}


def test_the_readme_helm_install(own_real_kube: ControlPlane, tmp_path: Path) -> None:
    (argv,) = readme_commands("helm")
    as_a_user(own_real_kube, argv, tmp_path)
    release, namespace = argv[2], argv[argv.index("-n") + 1]
    status = as_a_user(
        own_real_kube, ["helm", "status", release, "-n", namespace, "-o", "json"], tmp_path
    )
    assert json.loads(status)["info"]["status"] == "deployed"
