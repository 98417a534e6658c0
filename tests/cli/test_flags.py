"""Flags shared by several commands: one spelling, one parser, exit codes in every --help."""

from __future__ import annotations

import argparse

import pytest

from labeler.base.errors import UsageError
from labeler.cli import PLUGIN_PROG, PROG, build_parser, main, overview_parser, parse
from labeler.commands import COMMANDS, MODULES
from labeler.commands._base import parse_pairs


def test_parse_pairs_repeated_and_comma_separated() -> None:
    assert parse_pairs(["a/b=c, d=e", "f="], "--x") == {"a/b": "c", "d": "e", "f": ""}
    assert parse_pairs(["a=1", "a=1"], "--x") == {"a": "1"}  # the same pair twice is fine
    assert parse_pairs(["nvidia.com/gpu=500m"], "--request", labels=False) == {
        "nvidia.com/gpu": "500m"
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["a/b"], "--x 'a/b': expected KEY=VALUE"),
        (["=v"], "--x '=v': expected KEY=VALUE"),
        (["Bad Key=v"], "--x 'Bad Key=v': key 'Bad Key'"),
        (["k=not ok"], "--x 'k=not ok': value 'not ok'"),
        (["k=1", "k=2"], "--x: k is given twice ('1' and '2')"),
    ],
)
def test_parse_pairs_errors_name_the_flag(values: list[str], message: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_pairs(values, "--x")
    assert str(e.value).startswith(message)


def test_bad_pair_is_a_usage_error_in_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    generate = ["generate", "--profile", "oci-rdma", "--flavor-node-label", "a/b"]
    assert main(generate) == 2
    assert "--flavor-node-label 'a/b': expected KEY=VALUE" in capsys.readouterr().err
    advise = ["advise", "--profile", "oci-rdma", "--from-snapshot", "x.yaml", "--pods", "1"]
    assert main([*advise, "--request", "nvidia.com/gpu"]) == 2
    assert "--request 'nvidia.com/gpu': expected KEY=VALUE" in capsys.readouterr().err


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_each_command_is_built_from_the_module_that_registers_it() -> None:
    # A command line builds only its own command's module (start-up time), so the table of
    # which module registers which command must match what the modules register.
    assert set(_subcommands()) == set(COMMANDS)
    for module in MODULES:
        names = [name for name, (owner, _) in COMMANDS.items() if owner == module]
        for name in names:
            parser = build_parser(name)
            action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            assert set(action.choices) == set(names), (module, name)


@pytest.mark.parametrize("prog", [PROG, PLUGIN_PROG])
def test_the_overview_lists_what_the_whole_command_line_lists(prog: str) -> None:
    # --help lists every command from the table without importing the modules: it must
    # print what the modules' own parsers print, byte for byte.
    assert overview_parser(prog).format_help() == build_parser(prog=prog).format_help()


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["-h"],
        ["--version"],
        [],
        ["bogus"],
        ["--log-level", "debug"],
        ["--", "check"],
        ["--log-level=warning", "check", "--profile", "oci-rdma"],  # found further on
    ],
)
def test_a_line_without_a_command_first_ends_as_with_the_whole_command_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ours:
        parse(argv)
    said = capsys.readouterr()
    with pytest.raises(SystemExit) as full:
        build_parser().parse_args(argv)
    assert (ours.value.code, said) == (full.value.code, capsys.readouterr())


def test_every_command_documents_its_exit_codes() -> None:
    commands = _subcommands()
    assert {"agent", "apply", "delete", "plan", "export", "lld", "generate", "check"} <= set(
        commands
    )
    for name, sub in commands.items():
        text = sub.format_help()
        assert "exit codes:" in text, name
        for code in ("0", "1", "2"):
            assert f"\n  {code}  " in text, (name, code)
    assert "\n  3  " in commands["audit"].format_help()
    assert "\n  3  " in commands["check"].format_help()
    assert "\n  3  " in commands["apply"].format_help()
    assert "does not fit" in commands["advise"].format_help()


@pytest.mark.parametrize(
    "argv",
    [
        ["agent", "--profile", "ascend-superpod"],
        ["lld", "-i", "x.xlsx"],
        ["generate", "--profile", "ascend-superpod"],
        ["check", "--profile", "ascend-superpod", "--from-cluster"],
        ["audit", "--profile", "ascend-superpod"],
        ["placement", "-l", "job-name=x", "--profile", "ascend-superpod"],
        [
            "advise",
            "--profile",
            "ascend-superpod",
            "--from-cluster",
            "--pods",
            "1",
            "--request",
            "x=1",
        ],
        ["domains", "--profile", "ascend-superpod", "--from-cluster", "--request", "x=1"],
    ],
)
def test_tree_name_has_one_name_and_one_alias(argv: list[str]) -> None:
    parser = build_parser()
    for flag in ("--topotree-name", "--tree-name"):
        assert parser.parse_args([*argv, flag, "t1"]).topotree_name == "t1"


def test_check_takes_o_for_its_report_format() -> None:
    parser = build_parser()
    base = ["check", "--profile", "oci-rdma", "--from-cluster"]
    assert parser.parse_args([*base, "-o", "json"]).output == "json"
    assert parser.parse_args([*base, "--format", "json"]).output == "json"


def test_scope_flags_are_the_same_in_audit_check_and_generate() -> None:
    commands = _subcommands()
    default = (
        "nodes with allocatable nvidia.com/gpu or huawei.com/Ascend* > 0 or with "
        "gpu.nvidia.com devices (DRA)"
    )
    for name in ("audit", "check", "generate", "map"):
        text = " ".join(commands[name].format_help().split())
        assert "--node-selector SELECTOR" in text and "--resource PATTERN" in text, name
        assert "--dra-driver DRIVER" in text, name
        assert default in text, name


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--flavor-toleration", "k=v:Sometimes"], "effect 'Sometimes' is not one of"),
        (["--volcano-version", "latest"], "Volcano version 'latest': use MAJOR.MINOR"),
        (["--hypernode-prefix", "Bad_"], "'Bad_' must be lowercase letters"),
        (["--discovery-name", "x" * 21], "is 21 characters; Volcano allows at most 20"),
        (["--topology-name", "Bad_Name"], "'Bad_Name' must be lowercase"),
        (["--flavor-name", "Bad_Name"], "'Bad_Name' must be lowercase"),
    ],
)
def test_a_bad_flag_value_exits_2_on_one_line_before_reading_anything(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --from-csv names a file that does not exist: a usage error must come first.
    argv = ["generate", "--profile", "oci-rdma", "--from-csv", "/nonexistent.csv", *flags]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"topology-labeler generate: error: argument {flags[0]}: ")
    assert message in last


def test_advise_volcano_version_is_checked_while_parsing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["advise", "--profile", "oci-rdma", "--from-snapshot", "/nonexistent.yaml"]
    argv += ["--request", "nvidia.com/gpu=8", "--pods", "1", "--volcano-version", "latest"]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "argument --volcano-version: Volcano version 'latest'" in capsys.readouterr().err
