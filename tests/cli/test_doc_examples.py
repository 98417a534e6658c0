"""docs/profiles.md shows what the tool does: each file it quotes is the file in the repo,
each console example is run and prints what the page shows, and its tables of built-in
profiles and sources are the code's."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from labeler.cli import main
from labeler.core.profiles import BUILTIN, load_profile
from labeler.sources import ascend, azure, gce, nvlink, oci_imds

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "profiles.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def blocks(kind: str) -> list[str]:
    return [body for lang, body in FENCE.findall(DOC.read_text()) if lang == kind]


def quoted_files() -> list[tuple[str, str]]:
    """(path, quoted text) of each block the page introduces with ``<!-- file: PATH -->``."""
    marker = re.compile(r"^<!-- file: (\S+) -->\n```\w*\n(.*?)^```", re.M | re.S)
    return marker.findall(DOC.read_text())


def commands(block: str) -> list[tuple[list[str], list[str]]]:
    """(argv, expected output lines) of each ``$ command`` in a console block."""
    out: list[tuple[list[str], list[str]]] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        assert lines[i].startswith("$ "), lines[i]
        text = lines[i][2:]
        while text.endswith("\\"):
            i += 1
            text = text[:-1] + lines[i]
        i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        out.append((shlex.split(text), expected))
    return out


def matches(actual: list[str], expected: list[str]) -> bool:
    """Line by line; a line ``...`` stands for any lines (none included)."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(actual[k:], expected[1:]) for k in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and matches(actual[1:], expected[1:])


def test_quoted_files_are_the_repository_files_and_load() -> None:
    quoted = quoted_files()
    assert {p for p, _ in quoted} >= {"examples/profile-dc.yaml", "examples/profile-oci-gb200.yaml"}
    for path, text in quoted:
        assert (ROOT / path).read_text() == text, path
        load_profile(str(ROOT / path))


def test_console_examples_print_what_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    ran = 0
    for block in blocks("console"):
        for argv, expected in commands(block):
            if argv[0] == "cat":
                actual = Path(argv[1]).read_text().splitlines()
            else:
                assert argv[0] == "topology-labeler", argv
                capsys.readouterr()
                assert main(argv[1:]) == 0, argv
                captured = capsys.readouterr()
                actual = (captured.out + captured.err).splitlines()
            assert matches(actual, expected), (argv, actual)
            ran += 1
    assert ran >= 3  # check, generate, cat


def _table(heading: str) -> list[list[str]]:
    """The body rows of the first table after ``heading``, cells stripped."""
    lines = DOC.read_text().split(heading, 1)[1].splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    rows = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")])
    return rows[2:]  # past the header and the --- line


def test_the_table_of_builtins_is_the_code() -> None:
    rows = {r[0].strip("`"): r for r in _table("## Built-in profiles")}
    assert set(rows) == set(BUILTIN)
    for name, (_, sources, levels, _extras, encoding) in rows.items():
        profile = load_profile(name)
        assert re.findall(r"`([^`]+)`", sources) == list(profile.sources), name
        keys = [k for k in re.findall(r"`([^`]+)`", levels) if k != profile.topology.tree_label]
        assert keys == list(profile.level_keys), name
        block = profile.topology.block_level
        assert ("(block)" in levels) == (block is not None), name
        assert encoding.strip("`") == profile.encoding, name


def test_the_table_of_sources_is_the_code() -> None:
    rows = {r[0].strip("`"): r for r in _table("## Sources: where the agent reads the values")}
    modules = {
        "oci-imds": oci_imds,
        "ascend": ascend,
        "gce-metadata": gce,
        "azure-imds": azure,
        "nvidia-smi": nvlink,
    }
    assert set(rows) == {"static", *modules}
    for name, module in modules.items():
        _, _, levels, extras = rows[name]
        assert re.findall(r"`([^`]+)`", levels) == list(module.ROLES.levels), name
        assert re.findall(r"`([^`]+)`", extras) == list(module.ROLES.extras), name


def test_generate_help_says_how_to_mark_the_block_level(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "'block: true'" in text and "docs/profiles.md" in text
    assert "topology.conf does not change" in text
