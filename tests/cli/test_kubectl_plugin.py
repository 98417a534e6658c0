"""The kubectl plugin, run by the real kubectl: ``kubectl topology …`` finds the installed
``kubectl-topology`` script on PATH and runs the same commands as ``topology-labeler``,
with the plugin's name in usage lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labeler.base.version import __version__
from labeler.cli import main

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "examples" / "snapshot-oci.yaml"
ADVISE = [
    "advise",
    "--profile",
    "oci-rdma",
    "--from-snapshot",
    str(SNAPSHOT),
    "--pods",
    "4",
    "--request",
    "nvidia.com/gpu=8",
    "--required",
    "local_block",
]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH holding kubectl and only the installed plugin script, as a user's would."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        if os.environ.get("CI"):
            pytest.fail("CI=true but kubectl is not installed")
        pytest.skip("kubectl is not installed")
    script = Path(sys.executable).parent / "kubectl-topology"
    assert script.is_file(), (
        f"{script} is missing: the console script is installed with the project "
        "(pip install -e . — ./scripts/test.sh does it)"
    )
    bin_dir = tmp_path_factory.mktemp("plugin-bin")
    (bin_dir / "kubectl-topology").symlink_to(script)
    return os.pathsep.join([str(bin_dir), str(Path(kubectl).parent)])


def kubectl(path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "KUBECONFIG": os.devnull}
    return subprocess.run(
        ["kubectl", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_kubectl_lists_the_plugin(plugin_path: str) -> None:
    p = kubectl(plugin_path, "plugin", "list")
    assert p.returncode == 0, p.stderr
    assert "kubectl-topology" in p.stdout


def test_help_names_the_plugin(plugin_path: str) -> None:
    p = kubectl(plugin_path, "topology", "--help")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: kubectl topology ")
    for command in ("advise", "audit", "generate", "map"):
        assert command in p.stdout
    sub = kubectl(plugin_path, "topology", "advise", "--help")
    assert sub.returncode == 0, sub.stderr
    assert sub.stdout.startswith("usage: kubectl topology advise ")
    version = kubectl(plugin_path, "topology", "--version")
    assert version.stdout.strip() == f"kubectl topology {__version__}"


def test_a_real_command_gives_the_same_answer_and_exit_code(
    plugin_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    expected_code = main(ADVISE)
    expected = capsys.readouterr().out
    p = kubectl(plugin_path, "topology", *ADVISE)
    assert (p.returncode, p.stdout) == (expected_code, expected)
    assert expected_code == 3 and "does NOT fit now" in expected


def test_a_bad_flag_is_a_usage_error_naming_the_plugin(plugin_path: str) -> None:
    p = kubectl(plugin_path, "topology", "advise", "--pods", "many")
    assert p.returncode == 2
    assert "usage: kubectl topology advise" in p.stderr
    assert "argument --pods: invalid int value: 'many'" in p.stderr


def test_hints_name_commands_as_the_plugin(plugin_path: str, tmp_path: Path) -> None:
    """A message that tells the user to run another command names it as they invoked this
    one: 'kubectl topology check', not 'topology-labeler check'."""
    keys = "oci.oraclecloud.com/rdma.hpc_island_id,oci.oraclecloud.com/rdma.network_block_id"
    csv = tmp_path / "bad.csv"  # local block lb1 under two network blocks: not consistent
    csv.write_text(
        f"nodeName,{keys},oci.oraclecloud.com/rdma.local_block_id\n"
        "gpu-1,i1,nb1,lb1\ngpu-2,i1,nb2,lb1\n"
    )
    argv = ["generate", "--profile", "oci-rdma", "--from-csv", str(csv), "-o", "-"]
    p = kubectl(plugin_path, "topology", *argv)
    assert p.returncode == 1, p.stderr
    assert "fix the labels (see 'kubectl topology check'), or pass --force" in p.stderr
    assert "topology-labeler" not in p.stderr
    p = subprocess.run(
        [str(Path(sys.executable).parent / "topology-labeler"), *argv],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "(see 'topology-labeler check')" in p.stderr
