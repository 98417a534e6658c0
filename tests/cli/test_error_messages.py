"""Mistakes a new operator makes get one clear line (file, place, what to do), never a
traceback, and the exit code each command's --help documents."""

from __future__ import annotations

from pathlib import Path

import pytest
import urllib3

from labeler.cli import main
from labeler.kube.errors import translate
from tests.fakekube import FakeKube
from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
OCI_CSV = str(ROOT / "examples" / "oci-cluster.csv")
SNAPSHOT = str(ROOT / "examples" / "snapshot-oci.yaml")


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("flag", ["-o", "--output-dir"])
def test_generate_into_a_missing_directory_is_an_error_not_a_traceback(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = blocker / "sub" / "x.yaml" if flag == "-o" else blocker / "sub"
    argv = ["generate", "--profile", "oci-rdma", "--from-csv", OCI_CSV, flag, str(target)]
    assert main(argv) == 1
    line = _error(capsys)
    assert str(blocker / "sub") in line and "writable" in line


def test_export_to_a_missing_directory_exits_1_as_help_says(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nodir" / "backup.csv"
    argv = ["export", "--profile", "oci-rdma", "-o", str(out), "--kubeconfig", str(kubeconfig)]
    assert main(argv) == 1
    assert f"{out}: cannot write" in _error(capsys)


def test_yaml_errors_are_one_line_with_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "dc.yaml"
    profile.write_text("name: dc\nlevels: [\n")
    assert main(["check", "--profile", str(profile), "--from-csv", OCI_CSV]) == 1
    assert f"{profile}:3:1: expected the node content" in _error(capsys)

    snap = tmp_path / "snap.yaml"
    snap.write_text("items:\n- a: 1\n\tb: 2\n")
    argv = ["advise", "--profile", "oci-rdma", "--from-snapshot", str(snap), "--pods", "1"]
    assert main([*argv, "--request", "nvidia.com/gpu=1"]) == 1
    line = _error(capsys)
    assert line.startswith(f"error: {snap}:3:") and "kubectl get nodes,pods" in line

    conf = tmp_path / "cm.yaml"
    conf.write_text("kind: ConfigMap\ndata: {a: [\n")
    assert main(["generate", "--profile", "oci-rdma", "--merge-into", str(conf)]) == 1
    assert f"{conf}:3:1:" in _error(capsys)


def test_missing_kubeconfig_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope"
    assert main(["audit", "--profile", "oci-rdma", "--kubeconfig", str(missing)]) == 2
    assert f"--kubeconfig {missing}: no such file" in _error(capsys)
    monkeypatch.setenv("KUBECONFIG", str(missing))
    assert main(["audit", "--profile", "oci-rdma"]) == 2
    assert f"$KUBECONFIG {missing}: no such file" in _error(capsys)


def test_no_answer_names_the_server_and_the_reason_once() -> None:
    port = free_port()
    with pytest.raises(urllib3.exceptions.MaxRetryError) as caught:
        urllib3.PoolManager().request("GET", f"http://127.0.0.1:{port}/api", retries=0)
    message = str(translate(caught.value, "list", "nodes"))
    assert message == (
        f"list nodes: no answer from the API server at 127.0.0.1:{port} (Connection refused); "
        "check the server address and network, then retry"
    )


def test_unknown_report_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["advise", "--profile", "oci-rdma", "--from-snapshot", SNAPSHOT, "-o", "xml"])
    assert e.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_profile_help_names_the_built_in_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("agent", "check", "audit", "export", "advise"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        out = out.replace("oci- rdma", "oci-rdma").replace("gce- nvlink", "gce-nvlink")  # wraps
        names = "oci-rdma, ascend-superpod, gce, azure, nvlink, oci-rdma-nvlink, gce-nvlink"
        assert f"{names}, or a profile YAML file" in out, command
