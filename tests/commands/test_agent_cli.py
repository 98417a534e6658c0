"""The agent's command line: bad input is refused before anything is read or written."""

from __future__ import annotations

import pytest

from labeler.cli import main


def test_no_node_name_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert main(["agent", "--profile", "oci-rdma", "--once"]) == 2
    assert "pass --node-name or set NODE_NAME" in capsys.readouterr().err


def test_an_invalid_node_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "--profile", "oci-rdma", "--node-name", "Bad_Name", "--once"]) == 2
    assert "not a valid node name" in capsys.readouterr().err


def test_an_unknown_encoding_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["agent", "--profile", "oci-rdma", "--node-name", "n1", "--encoding", "md5"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --encoding: unknown encoding 'md5'" in err.splitlines()[-1]
