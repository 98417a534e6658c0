"""README.md shows what the tool does: every console example that runs on the files in
the repository (no cluster) is run, and prints what the README shows ("..." stands for
lines left out). Examples of a cluster's output, or of files a user makes, are shown as
illustrations and not run here."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from labeler.cli import main
from tests.cli.test_doc_examples import FENCE, commands, matches

ROOT = Path(__file__).resolve().parents[2]


def runnable() -> list[tuple[list[str], list[str]]]:
    """(argv, expected lines) of each README console command that needs only the repo."""
    out = []
    for lang, block in FENCE.findall((ROOT / "README.md").read_text()):
        if lang != "console" or not block.startswith("$ "):
            continue  # an output alone: the text around it says what printed it
        for argv, expected in commands(block):
            if argv[0] != "topology-labeler" or "--from-cluster" in argv:
                continue
            files = [a for a in argv if a.endswith((".yaml", ".yml", ".json", ".csv", ".xlsx"))]
            if all((ROOT / f).is_file() for f in files):
                out.append((argv, expected))
    return out


EXAMPLES = runnable()


def test_there_are_examples_to_run() -> None:
    assert len(EXAMPLES) >= 6


@pytest.mark.parametrize(
    ("argv", "expected"), EXAMPLES, ids=[shlex.join(a[1:4]) for a, _ in EXAMPLES]
)
def test_readme_example_prints_what_the_readme_shows(
    argv: list[str],
    expected: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(ROOT)  # the paths as the README gives them
    code = main(argv[1:])
    out = capsys.readouterr().out
    assert code in (0, 3), out
    assert matches(out.splitlines(), expected), out
