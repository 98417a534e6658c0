"""Flags shared by several commands: one parser, errors that name the flag."""

from __future__ import annotations

import pytest

from labeler.cli import main
from labeler.commands._base import parse_pairs
from labeler.errors import UsageError


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
