"""README.md shows what the tool does, and every command it shows is run by a test.

Its ``topology-labeler`` commands run here, in the README's order, against the fake API
server seeded as scripts/example.sh seeds it (13 GPU nodes, 12 of them in
examples/oci-cluster.csv), and print what the README shows ("..." stands for lines left
out). The other commands it shows are run by the tests ``RUN_BY`` names, which take them
from the README too. The console examples of the pages in docs/ that need only the
repository's files are run here as well (docs/profiles.md has its own test).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from labeler.cli import main
from tests.cli.test_doc_examples import FENCE, commands, matches
from tests.fakekube import FakeKube

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CSV = ROOT / "examples" / "oci-cluster.csv"

Shown = tuple[list[str], list[str] | None]  # argv, and the output shown (None: not shown)


def shown_commands(text: str) -> list[Shown]:
    """Every command a page shows, in its order: each ``$ command`` of a console block
    (with the lines it shows printed) and each line of a ``sh`` block (comments dropped)."""
    out: list[Shown] = []
    for lang, block in FENCE.findall(text):
        if lang == "console" and block.startswith("$ "):
            out.extend(commands(block))
        elif lang in ("sh", "bash"):
            for line in block.replace("\\\n", " ").splitlines():
                argv = shlex.split(line, comments=True)
                if argv:
                    out.append((argv, None))
    return out


def readme_commands(first: str) -> list[list[str]]:
    """The README's commands whose first word is ``first``, for the tests that run them."""
    return [argv for argv, _ in shown_commands(README.read_text()) if argv[0] == first]


# The commands the README shows that are not topology-labeler's, and the test that runs each
# exactly as shown. CI's entry point is the test command's test: .ci/run runs it.
RUN_BY = {
    "./scripts/example.sh": "tests/e2e/test_example_script.py",
    "./scripts/test.sh": ".ci/run",
    "pip": "tests/e2e/test_install.py",
    "kubectl": "tests/realkube/test_readme_install.py",
    "helm": "tests/realkube/test_readme_install.py",
}


def test_every_command_the_readme_shows_is_run_by_a_test() -> None:
    shown = shown_commands(README.read_text())
    assert len(shown) >= 12
    for argv, _ in shown:
        if argv[0] == "topology-labeler":
            continue  # run below
        assert argv[0] in RUN_BY, f"{shlex.join(argv)}: no test runs it; add one to RUN_BY"
        runner = ROOT / RUN_BY[argv[0]]
        assert runner.is_file(), runner
        if runner.name == "run":
            assert f"exec {argv[0]}" in runner.read_text().splitlines()
        else:  # the test takes the commands from the README, so it runs what it shows
            assert f'readme_commands("{argv[0]}")' in runner.read_text(), runner


def example_cluster(fake: FakeKube) -> None:
    """scripts/example.sh's cluster: gpu-00, which nobody planned for, and one unlabeled
    node for each row of examples/oci-cluster.csv, each with 8 GPUs."""
    gpus = {"nvidia.com/gpu": "8"}
    fake.add_node("gpu-00", allocatable=gpus)
    for row in CSV.read_text().splitlines()[1:]:
        fake.add_node(row.split(",")[0], allocatable=gpus)


def test_the_readme_commands_print_what_it_shows(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake_kube: FakeKube,
) -> None:
    example_cluster(fake_kube)
    monkeypatch.setenv("KUBECONFIG", str(fake_kube.write_kubeconfig(tmp_path / "kubeconfig")))
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)  # the paths as the README gives them; outputs stay here
    ran = 0
    for argv, expected in shown_commands(README.read_text()):
        if argv[0] != "topology-labeler":
            continue
        capsys.readouterr()
        code = main(argv[1:])
        out = capsys.readouterr().out
        assert code in (0, 3), (argv, out)
        assert expected is None or matches(out.splitlines(), expected), (argv, out)
        ran += 1
    assert ran >= 6


def docs_examples() -> list[tuple[str, list[str], list[str]]]:
    """(page, argv, expected lines) of each console command of docs/ that needs only the
    repository (not a cluster, nor a file the reader makes)."""
    out = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name == "profiles.md":
            continue
        for argv, expected in shown_commands(page.read_text()):
            if expected is None or argv[0] != "topology-labeler" or "--from-cluster" in argv:
                continue
            files = [a for a in argv if a.endswith((".yaml", ".yml", ".json", ".csv", ".xlsx"))]
            if all((ROOT / f).is_file() for f in files):
                out.append((page.name, argv, expected))
    return out


DOCS_EXAMPLES = docs_examples()


def test_there_are_docs_examples_to_run() -> None:
    assert len({page for page, _, _ in DOCS_EXAMPLES}) >= 2
    assert len(DOCS_EXAMPLES) >= 6


@pytest.mark.parametrize(
    ("page", "argv", "expected"),
    DOCS_EXAMPLES,
    ids=[f"{p}:{shlex.join(a[1:4])}" for p, a, _ in DOCS_EXAMPLES],
)
def test_a_docs_example_prints_what_the_page_shows(
    page: str,
    argv: list[str],
    expected: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(ROOT)  # the paths as the page gives them
    code = main(argv[1:])
    out = capsys.readouterr().out
    assert code in (0, 3), out
    assert matches(out.splitlines(), expected), out
