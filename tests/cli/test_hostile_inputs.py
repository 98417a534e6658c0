"""Hostile files and values: every one is a one-line error with the documented exit code,
never a traceback, a hang or a memory bomb, and nothing is written."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import openpyxl
import pytest

from labeler.base.errors import Exit
from labeler.cli import main
from tests import xlsx_books
from tests.fakekube import FakeKube

ROOT = Path(__file__).resolve().parents[2]
OCI_CSV = str(ROOT / "examples" / "oci-cluster.csv")
ASCEND_CSV = str(ROOT / "examples" / "ascend-cluster.csv")
SNAPSHOT = ROOT / "examples" / "snapshot-oci.yaml"
ADVISE = ["advise", "--profile", "oci-rdma", "--pods", "1", "--request", "nvidia.com/gpu=1"]


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return err[err.index("error:") :]


def _laughs(levels: int = 9) -> str:
    """The "billion laughs": each anchor lists the previous one 9 times (9**levels)."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


# --- point 6: tracebacks ------------------------------------------------------------------


@pytest.mark.parametrize("content", ["root:x:0:0:root:/root:/bin/bash\n", "[1,2", "- a\n- b\n"])
def test_a_kubeconfig_that_is_not_one_is_a_one_line_error(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config"
    config.write_text(content)
    assert main(["audit", "--profile", "oci-rdma", "--kubeconfig", str(config)]) == Exit.ERROR
    line = _error(capsys)
    assert f"cannot load cluster configuration ({config})" in line and "kubeconfig" in line


def test_no_cluster_configured_exits_1_as_help_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["audit", "--profile", "oci-rdma"]) == Exit.ERROR
    assert "no cluster configured" in _error(capsys)


@pytest.mark.parametrize(
    ("field", "value"),
    [("source", "[a]"), ("encoding", "[a]"), ("treeName", "[a]"), ("name", "{a: 1}")],
)
def test_a_profile_field_of_the_wrong_type_is_named(
    field: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.yaml"
    body = {"name": "p", "levels": "\n- key: example.com/block"}
    body[field] = value
    profile.write_text("".join(f"{k}: {v}\n" for k, v in body.items()))
    assert main(["check", "--profile", str(profile), "--from-csv", OCI_CSV]) == Exit.ERROR
    assert field in _error(capsys)


def _xlsx(path: Path, sheet_xml: bytes | None = None) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "A3超节点规划"
    ws.append(["主机名称", "机框编号"])
    ws.append(["n1", 1])
    buf = io.BytesIO()
    wb.save(buf)
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "xl/worksheets/sheet1.xml" and sheet_xml is not None:
                data = sheet_xml
            dst.writestr(item, data)
    return path


def test_an_xlsx_with_broken_xml_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = _xlsx(tmp_path / "lld.xlsx", b"<worksheet><sheetData><row r='1'><c r=")
    out = tmp_path / "out.csv"
    assert main(["lld", "--input", str(book), "--topotree-name", "t", "-o", str(out)]) == 1
    assert str(book) in _error(capsys)
    assert not out.exists()


@pytest.mark.parametrize("cmd", ["advise", "domains", "map"])
def test_a_deeply_nested_snapshot_is_a_one_line_error(
    cmd: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = tmp_path / "deep.json"
    snap.write_text("[" * 100_000)
    argv = {
        "advise": [*ADVISE, "--from-snapshot", str(snap)],
        "domains": ["domains", *ADVISE[1:3], "--from-snapshot", str(snap), *ADVISE[-2:]],
        "map": ["map", "--profile", "oci-rdma", "--from-snapshot", str(snap)],
    }[cmd]
    assert main(argv) == Exit.ERROR
    assert "nested" in _error(capsys)


@pytest.mark.parametrize("value", ["1e99999", "1e999999999", "1" * 5000])
def test_a_huge_request_quantity_is_refused_quickly(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["advise", "--profile", "oci-rdma", "--from-snapshot", str(SNAPSHOT), "--pods", "1"]
    assert main([*argv, "--request", f"nvidia.com/gpu={value}"]) == Exit.USAGE
    assert "too large" in _error(capsys)


def test_a_huge_quantity_in_a_snapshot_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SNAPSHOT.read_text()
    assert 'nvidia.com/gpu: "8"' in text
    snap = tmp_path / "snap.yaml"
    snap.write_text(text.replace('nvidia.com/gpu: "8"', 'nvidia.com/gpu: "1e999999999"', 1))
    assert main([*ADVISE, "--from-snapshot", str(snap)]) == Exit.ERROR
    assert "too large" in _error(capsys)


def test_a_csv_read_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from labeler.core import sheet

    monkeypatch.setattr(sheet, "MAX_CSV_BYTES", 1024)
    big = tmp_path / "big.csv"
    big.write_text("nodeName,a.io/b\n" + "n,1\n" * 1000)
    assert main(["generate", "--profile", "oci-rdma", "--from-csv", str(big)]) == Exit.ERROR
    assert "larger than 1 KiB" in _error(capsys)


def test_plan_from_dev_zero_stops_at_the_cap(
    fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", "--config-path", "/dev/zero", "--kubeconfig", str(kubeconfig)]
    assert main(argv) == Exit.ERROR
    assert "/dev/zero: larger than 64 MiB" in _error(capsys)
    assert fake_kube.count("patch") == 0


# --- point 7: hangs and memory bombs ---------------------------------------------------


def test_alias_bombs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(_laughs() + "name: p\nlevels:\n- key: example.com/block\n")
    assert main(["check", "--profile", str(profile), "--from-csv", OCI_CSV]) == Exit.ERROR
    assert "aliases" in _error(capsys)

    snap = tmp_path / "snap.yaml"
    item = "- kind: Node\n  metadata:\n    name: n1\n    labels: {a: *l9}\n"
    snap.write_text(_laughs() + "kind: List\nitems:\n" + item)
    assert main([*ADVISE, "--from-snapshot", str(snap)]) == Exit.ERROR
    assert "aliases" in _error(capsys)

    # an alias inside one List item: the fast reader hands that item to PyYAML
    snap.write_text(
        SNAPSHOT.read_text().replace(
            "items:\n",
            "items:\n- "
            + "\n  ".join(
                ["kind: Node", "metadata:", "  name: bomb", "  annotations:"]
                + [f"    {line}" for line in _laughs().splitlines()]
            )
            + "\n",
            1,
        )
    )
    assert main([*ADVISE, "--from-snapshot", str(snap)]) == Exit.ERROR
    assert "aliases" in _error(capsys)

    conf = tmp_path / "cm.yaml"
    inner = "".join(f"    {line}\n" for line in _laughs().splitlines())
    conf.write_text(
        "kind: ConfigMap\nmetadata: {name: v}\ndata:\n  volcano-scheduler.conf: |\n"
        + inner
        + "    actions: *l9\n"
    )
    before = conf.read_text()
    argv = ["generate", "--profile", "ascend-superpod", "--from-csv", ASCEND_CSV]
    assert main([*argv, "--merge-into", str(conf)]) == Exit.ERROR
    assert "aliases" in _error(capsys)
    assert conf.read_text() == before

    outer = tmp_path / "cm2.yaml"
    outer.write_text(_laughs() + "kind: ConfigMap\nmetadata: {name: v}\ndata: {x: *l9}\n")
    assert main([*argv, "--merge-into", str(outer)]) == Exit.ERROR
    assert "aliases" in _error(capsys)


def test_a_few_aliases_are_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "p.yaml"
    keys = ("hpc_island_id", "network_block_id", "local_block_id")
    levels = "".join(f"- key: oci.oraclecloud.com/rdma.{k}\n" for k in keys)
    profile.write_text(f"name: &n p\ntreeName: *n\nlevels:\n{levels}")
    assert main(["check", "--profile", str(profile), "--from-csv", OCI_CSV]) == Exit.OK


def test_a_profile_with_too_many_levels_is_refused_early(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.yaml"
    levels = "".join(f"- key: example.com/l{i}\n" for i in range(16))
    profile.write_text("name: p\nlevels:\n" + levels)
    assert main(["check", "--profile", str(profile), "--from-csv", OCI_CSV]) == Exit.ERROR
    line = _error(capsys)
    assert "16 levels" in line and "at most 15" in line

    levels = "".join(f"- key: example.com/l{i}\n" for i in range(200_000))
    profile.write_text("name: p\nlevels:\n" + levels)
    assert main(["check", "--profile", str(profile), "--from-csv", OCI_CSV]) == Exit.ERROR
    assert "larger than 1 MiB" in _error(capsys)


def test_an_xlsx_used_to_xfd1048576_is_read_cell_by_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = xlsx_books.book(tmp_path / "lld.xlsx", {"A3超节点规划": xlsx_books.HUGE_USED_RANGE})
    out = tmp_path / "out.csv"
    code = main(["lld", "--input", str(book), "--topotree-name", "t", "-o", str(out)])
    assert code == Exit.OK
    err = capsys.readouterr().err
    assert "ignored 1 cell(s) outside A1:IV100000 (first: XFD1048576 holds 'x')" in err
    assert out.read_text().splitlines()[1:] == ["n1,0,t"]


# --- point 9: exit codes that gate CI -------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "no nodes in the snapshot"),
        ("apiVersion: v1\nkind: List\nitems: []\n", "no nodes in the snapshot"),
        ('{"kind": "List", "items": [{"kind": "Pod"}]}', "no nodes in the snapshot"),
        ("{}", "not a Kubernetes List"),
    ],
)
def test_a_snapshot_without_nodes_is_an_error(
    content: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = tmp_path / "snap.yaml"
    snap.write_text(content)
    assert main([*ADVISE, "--from-snapshot", str(snap)]) == Exit.ERROR
    assert message in _error(capsys)


@pytest.mark.parametrize("cmd", ["audit", "check"])
def test_no_node_in_scope_is_incomplete(
    cmd: str, fake_kube: FakeKube, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kube.add_node("gpu-1", allocatable={"nvidia.com/gpu": "8"})
    argv = [cmd, "--profile", "oci-rdma", "--kubeconfig", str(kubeconfig)]
    argv += ["--node-selector", "pool=typo"]
    if cmd == "check":
        argv.append("--from-cluster")
    assert main(argv) == Exit.INCOMPLETE
    out = capsys.readouterr()
    assert "no node" in out.err


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--profile", "ascend-superpod", "--from-csv", ASCEND_CSV],
        ["generate", "--profile", "ascend-superpod", "--from-csv", ASCEND_CSV, "-o", "OUT"],
        ["lld", "--input", "IN", "-o", "OUT"],
    ],
    ids=["check", "generate", "lld"],
)
@pytest.mark.parametrize("tree", ["bad name!", "-x", "a" * 64])
def test_a_bad_tree_name_is_refused_by_every_command_alike(
    argv: list[str], tree: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = [str(out) if a == "OUT" else a for a in argv]
    args = [str(_xlsx(tmp_path / "in.xlsx")) if a == "IN" else a for a in args]
    assert main([*args, f"--topotree-name={tree}"]) == Exit.USAGE
    assert "--topotree-name" in _error(capsys)
    assert not out.exists()


def test_a_bad_tree_name_in_a_profile_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "name: p\ntreeName: 'bad name!'\ntreeLabel: example.com/tree\n"
        "levels:\n- key: example.com/block\n"
    )
    assert main(["check", "--profile", str(profile), "--from-csv", OCI_CSV]) == Exit.ERROR
    assert "treeName" in _error(capsys)
