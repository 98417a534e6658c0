"""The README's `pip install .`, into a venv of its own, gives working commands: the
package holds every module and file the commands need (the map's page, the built-in
profiles), not only what an editable install finds in the checkout."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.cli.test_readme_examples import readme_commands

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LEFT_OUT = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".cache",
    "out",
    "build",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
)


def test_pip_install_gives_working_commands(tmp_path: Path) -> None:
    (argv,) = readme_commands("pip")
    # A copy of the checkout, so the build's egg-info and build/ land there, not here.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=LEFT_OUT, symlinks=True)
    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    # The dependencies come from this environment (no download): its site-packages is on
    # the new venv's path, but not its .pth files, so not the editable install of ours.
    (site,) = (target / "lib").glob("python3.*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    bin_dir = target / "bin"
    pip = subprocess.run(
        [str(bin_dir / argv[0]), *argv[1:]], cwd=source, capture_output=True, text=True, timeout=600
    )
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    assert (bin_dir / "kubectl-topology").is_file()

    def run(*args: str) -> str:
        p = subprocess.run(
            [str(bin_dir / "topology-labeler"), *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        return p.stdout

    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import labeler; print(labeler.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert where.startswith(str(site)), where  # the installed copy, not this checkout
    snapshot = str(ROOT / "examples" / "snapshot-oci.yaml")
    assert "map of 12 node(s)" in run(
        "map", "--profile=oci-rdma", f"--from-snapshot={snapshot}", "-o", "m.html"
    )
    assert "</html>" in (tmp_path / "m.html").read_text()
