"""The MindCluster twins behave like the originals on every input the originals handle.

Each case is one that MindCluster's ``multilevel-label-tool`` scripts handle (its
label_tool.py runs ``kubectl label --overwrite`` per CSV row; its lld_parser.py reads the
plan sheet's columns down to the first blank cell and writes a CSV with csv.writer). The
twins run in-process through their main() with argv, against the fake API server; the
expected lines are the originals' messages. The last tests cover the inputs where the twins
stay stricter: a clearer error, exit 1, nothing written.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from labeler.commands.mindcluster import label_tool_main, label_tool_parser, lld_parser_main
from labeler.core.node import OWNED_ANNOTATION
from tests.commands.conftest import Result
from tests.fakekube import FakeKube

G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"
Twin = Callable[..., Result]


def labels(fake: FakeKube, node: str) -> dict[str, str]:
    """The node's labels without the kubelet's own (kubernetes.io/...)."""
    found = fake.get_node(node)["metadata"].get("labels") or {}
    return {k: v for k, v in found.items() if "kubernetes.io/" not in k}


def owned(fake: FakeKube, node: str) -> str | None:
    annotations = fake.get_node(node)["metadata"].get("annotations") or {}
    return annotations.get(OWNED_ANNOTATION)


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def label_tool(twin: Twin, kubeconfig: Path, *args: str) -> Result:
    return twin(label_tool_main, *args, kubeconfig=kubeconfig)


def accepted_flags() -> set[str]:
    sub = next(a for a in label_tool_parser()._actions if a.dest == "command")
    return {flag for p in sub.choices.values() for a in p._actions for flag in a.option_strings}


# --- 1. labels set by the original or by a person ---------------------------------------


def test_overwrites_and_removes_keys_it_did_not_set_and_owns_what_it_writes(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, twin: Twin
) -> None:
    # As the original leaves a cluster: the keys, no owned-labels annotation.
    fake_kube.add_node("n1", labels={G: "9", T: "old", "keep": "x"})
    fake_kube.add_node("n2", labels={G: "0"})
    csv = write_csv(tmp_path / "c.csv", f"nodeName,{G},{T}\nn1,0,new\nn2,0,new\n")

    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(csv))
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.splitlines() == [
        "Starting adding labels...",
        "Adding labels completed successfully!",
        "Processed 2 nodes.",
    ]
    assert labels(fake_kube, "n1") == {G: "0", T: "new", "keep": "x"}
    assert owned(fake_kube, "n1") == f"{T},{G}"  # what it wrote (sorted)
    assert owned(fake_kube, "n2") == T  # G already had the value: not written, not claimed

    # Delete removes every header key, also one a person set, like ``kubectl label k-``.
    fake_kube.set_node_labels("n2", {G: "7"})
    p = label_tool(twin, kubeconfig, "delete", "--config-path", str(csv))
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.splitlines() == [
        "Starting removing labels...",
        "Removing labels completed successfully!",
        "Processed 2 nodes.",
    ]
    assert labels(fake_kube, "n1") == {"keep": "x"}
    assert labels(fake_kube, "n2") == {}
    assert owned(fake_kube, "n1") is None and owned(fake_kube, "n2") is None


# --- 2. nodes not in the cluster -------------------------------------------------------


def test_labels_the_nodes_that_exist_and_lists_the_missing_ones(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, twin: Twin
) -> None:
    fake_kube.add_node("n1")
    fake_kube.add_node("n3")
    csv = write_csv(tmp_path / "c.csv", f"nodeName,{G}\nn1,0\nghost,0\nn3,1\nghost2,1\n")
    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(csv))
    assert (p.returncode, p.stderr) == (1, "")
    assert p.stdout.splitlines() == [
        "Starting adding labels...",
        "Adding labels completed, but some nodes failed.",
        "Successful nodes (2): n1, n3",
        "Failed nodes (2) and error messages:",
        '  - ghost: Error from server (NotFound): nodes "ghost" not found',
        '  - ghost2: Error from server (NotFound): nodes "ghost2" not found',
        "Not in the cluster (2): ghost, ghost2; check the names with 'kubectl get nodes', "
        "and the cluster with --kubeconfig or --context",
    ]
    assert labels(fake_kube, "n1") == {G: "0"} and labels(fake_kube, "n3") == {G: "1"}
    # Every flag a hint names is one the twin accepts.
    named = set(re.findall(r"--[a-z][a-z-]*", p.stdout))
    assert named and named <= accepted_flags()


# --- 3. short rows, repeated rows, rows without a node name ----------------------------


def test_short_rows_padded_repeats_applied_once_unnamed_rows_skipped(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, twin: Twin
) -> None:
    for n in ("n1", "n2"):
        fake_kube.add_node(n, labels={T: "old"})
    text = f"nodeName,{G},{T}\nn1,0\nn2,1,t\n\nn2,1,t\n,2,t\n,,\n"
    csv = write_csv(tmp_path / "c.csv", text)
    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(csv))
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.splitlines() == [
        "Starting adding labels...",
        "Warning: Row 5 repeats row 3, applied once",
        "Warning: Row 6 has empty nodeName, skipped",
        "Warning: Row 7 has empty nodeName, skipped",
        "Adding labels completed successfully!",
        "Processed 2 nodes.",
    ]
    assert labels(fake_kube, "n1") == {G: "0", T: "old"}  # the padded cell leaves T alone
    assert labels(fake_kube, "n2") == {G: "1", T: "t"}
    assert fake_kube.count("patch") == 2

    # Header cells with stray spaces are read as their keys.
    csv = write_csv(tmp_path / "s.csv", f" nodeName , {G} \nn1,5\n")
    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(csv))
    assert p.returncode == 0, p.stdout
    assert labels(fake_kube, "n1")[G] == "5"


# --- 4. a row whose label cells are all empty ------------------------------------------


def test_a_row_without_values_counts_as_processed(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, twin: Twin
) -> None:
    fake_kube.add_node("n1", labels={G: "3"})
    fake_kube.add_node("n2")
    csv = write_csv(tmp_path / "c.csv", f"nodeName,{G},{T}\nn1,,\nn2,1,t\n")
    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(csv))
    assert (p.returncode, p.stdout.splitlines()[-1]) == (0, "Processed 2 nodes.")
    assert labels(fake_kube, "n1") == {G: "3"}  # nothing asked, nothing changed

    # On delete the empty cells do not matter: every header key goes.
    p = label_tool(twin, kubeconfig, "delete", "--config-path", str(csv))
    assert (p.returncode, p.stdout.splitlines()[-1]) == (0, "Processed 2 nodes.")
    assert labels(fake_kube, "n1") == {} and labels(fake_kube, "n2") == {}

    # Only rows without a node name: nothing to do, as the original says.
    csv = write_csv(tmp_path / "e.csv", f"nodeName,{G}\n,1\n")
    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(csv))
    assert (p.returncode, p.stdout.splitlines()) == (
        0,
        [
            "Starting adding labels...",
            "Warning: Row 2 has empty nodeName, skipped",
            "No valid nodes to process.",
        ],
    )


# --- 5. error messages: the original's first line ---------------------------------------


def test_csv_errors_start_with_the_originals_line(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, twin: Twin
) -> None:
    fake_kube.add_node("n1")
    cases = {
        f"node,{G}\nn1,0\n": ["Error: First column of CSV file must be 'nodeName'"],
        f"nodeName,{G}\n": ["Error: CSV file must contain at least a header row and one data row"],
        "": ["Error: CSV file must contain at least a header row and one data row"],
    }
    for text, first in cases.items():
        csv = write_csv(tmp_path / "c.csv", text)
        p = label_tool(twin, kubeconfig, "apply", "--config-path", str(csv))
        lines = p.stdout.splitlines()
        assert (p.returncode, lines[:2]) == (1, ["Starting adding labels...", *first]), text
        assert lines[2].startswith(str(csv)), lines  # our detail follows
    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(tmp_path / "no.csv"))
    assert (p.returncode, p.stdout) == (1, f"Error: File '{tmp_path / 'no.csv'}' does not exist\n")
    assert fake_kube.count("patch") == 0


def workbook(path: Path, rows: list[list[Any]], *, title: str = "超节点规划") -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = title
    for row in rows:
        ws.append(row)
    wb.save(path)
    return path


def lld(twin: Twin, xlsx: Path, out: Path, *extra: str) -> Result:
    return twin(lld_parser_main, "-i", str(xlsx), "-o", str(out), "-t", "prod", *extra)


def test_lld_errors_start_with_the_originals_line(tmp_path: Path, twin: Twin) -> None:
    out = tmp_path / "o.csv"
    p = lld(twin, tmp_path / "none.xlsx", out)
    assert (p.returncode, p.stdout.splitlines()) == (
        1,
        [f"Error: Input file '{tmp_path / 'none.xlsx'}' does not exist", "Script execution failed"],
    )

    xlsx = workbook(tmp_path / "a.xlsx", [["主机名称", "机框编号"], ["n1", 1]], title="规划")
    p = lld(twin, xlsx, out)
    lines = p.stdout.splitlines()
    assert (p.returncode, lines[0]) == (1, "Error: Worksheet containing '超节点规划' not found")
    assert "sheets: '规划'" in lines[1] and lines[-1] == "Script execution failed"

    xlsx = workbook(tmp_path / "b.xlsx", [["主机", "机框"], ["n1", 1]])
    p = lld(twin, xlsx, out)
    lines = p.stdout.splitlines()
    assert (p.returncode, lines[:2]) == (
        1,
        [
            "Target worksheet found: 超节点规划",
            "Error: The following headers are not found: 主机名称, 机框编号",
        ],
    )
    assert "not found in rows 1-100" in lines[2] and lines[-1] == "Script execution failed"
    assert not out.exists()


# --- 6. a note under the LLD table ------------------------------------------------------


def test_lld_stops_at_a_note_under_the_table_but_keeps_hosts_after_a_stray_blank(
    tmp_path: Path, twin: Twin
) -> None:
    rows: list[list[Any]] = [["主机名称", "机框编号"], ["n1", 1], ["n2", 13]]
    # The original stops at the first blank row (n3 is lost: its bug, fixed here) and
    # never reads the note; the twin stops at the note and says so.
    rows += [[], ["n3", 14], [], ["注：机框编号从1开始", None], ["以上为规划", "见附件"]]
    out = tmp_path / "o.csv"
    p = lld(twin, workbook(tmp_path / "a.xlsx", rows), out)
    assert (p.returncode, p.stdout.splitlines()) == (
        0,
        [
            "Target worksheet found: 超节点规划",
            f"Warning: {tmp_path / 'a.xlsx'}: sheet '超节点规划': the table ends at row 5; "
            "ignored rows 7-8 below it: not host rows ('超节点规划'!A7 holds "
            "'注：机框编号从1开始'); if they are hosts, delete the blank row(s) above them",
            f"CSV file successfully generated: {out}",
            "Processed 3 rows of data",
            "Topotree name: prod",
            "Group per rack (divisor): 12",
            "Script execution completed",
        ],
    )
    assert (
        out.read_bytes() == f"nodeName,{G},{T}\r\nn1,0,prod\r\nn2,1,prod\r\nn3,1,prod\r\n".encode()
    )

    # A note merged across the table, anchored left of the host column: the host and
    # frame cells under the merge are blank, so the table simply ends.
    rows = [["序号", "主机名称", "机框编号"], [1, "n1", 1], [2, "n2", 13], []]
    wb = openpyxl.load_workbook(workbook(tmp_path / "b.xlsx", rows))
    ws = wb["超节点规划"]
    ws["A5"] = "注：以上为规划"
    ws.merge_cells("A5:C5")
    wb.save(tmp_path / "b.xlsx")
    p = lld(twin, tmp_path / "b.xlsx", out)
    assert p.returncode == 0 and "Warning" not in p.stdout, p.stdout
    assert "Processed 2 rows of data" in p.stdout


# --- 7. a frame number merged over its hosts' rows --------------------------------------


def test_lld_frame_cell_merged_over_its_hosts(
    fake_kube: FakeKube, tmp_path: Path, twin: Twin
) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "A3超节点规划"
    ws.append(["主机名称", "机框编号"])
    ws.append([None, None])  # headers drawn two rows tall
    ws.merge_cells("A1:A2")
    ws.merge_cells("B1:B2")
    for i in range(12):
        ws.append([f"n{i + 1}", 1 if i == 0 else 13 if i == 6 else None])
    ws.merge_cells("B3:B8")
    ws.merge_cells("B9:B14")
    wb.save(tmp_path / "m.xlsx")
    out = tmp_path / "o.csv"
    p = lld(twin, tmp_path / "m.xlsx", out)
    assert p.returncode == 0, p.stdout
    assert "Processed 12 rows of data" in p.stdout
    rows = out.read_text(encoding="utf-8").splitlines()[1:]
    assert rows == [f"n{i},0,prod" for i in range(1, 7)] + [f"n{i},1,prod" for i in range(7, 13)]


# --- 8. the CSV's bytes, read back by the twin label tool ------------------------------


def test_lld_csv_has_crlf_and_no_bom_and_the_label_tool_reads_it(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, twin: Twin
) -> None:
    fake_kube.add_node("n1")
    out = tmp_path / "o.csv"
    p = lld(twin, workbook(tmp_path / "a.xlsx", [["主机名称", "机框编号"], ["n1", 25]]), out)
    assert p.returncode == 0, p.stdout
    assert out.read_bytes() == f"nodeName,{G},{T}\r\nn1,2,prod\r\n".encode()
    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(out))
    assert (p.returncode, p.stdout.splitlines()[-1]) == (0, "Processed 1 nodes.")
    assert labels(fake_kube, "n1") == {G: "2", T: "prod"}


# --- may stay stricter: a clearer error, exit 1, nothing written -----------------------


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        (f"nodeName,{G}\nn1,0\nn1,1\n", "node 'n1' already has a row on line 2 with other values"),
        (f"nodeName,{G}\nn1,a b\n", "invalid value 'a b' for huawei.com/topotree.groupid"),
    ],
)
def test_stricter_csv_refused_before_any_write(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, twin: Twin, text: str, detail: str
) -> None:
    fake_kube.add_node("n1")
    csv = write_csv(tmp_path / "c.csv", text)
    p = label_tool(twin, kubeconfig, "apply", "--config-path", str(csv))
    lines = p.stdout.splitlines()
    assert (p.returncode, lines[1]) == (1, f"Error: {csv}: 1 problem(s); nothing written:")
    assert detail in lines[2]
    assert fake_kube.counts() == {}


@pytest.mark.parametrize(
    ("rows", "detail"),
    [
        ([["n1", "三"]], "!B2: frame number '三' is not a whole number"),
        ([["n2", 1], ["n2", 1]], "!A3: host 'n2' is already listed at '超节点规划'!A2"),
        ([["Node-3", 1]], "node names are lowercase (the kubelet lowercases the host name)"),
    ],
)
def test_stricter_lld_refused_without_a_csv(
    tmp_path: Path, twin: Twin, rows: list[list[Any]], detail: str
) -> None:
    rows = [["主机名称", "机框编号"], *rows]
    out = tmp_path / "o.csv"
    p = lld(twin, workbook(tmp_path / "a.xlsx", rows), out)
    lines = p.stdout.splitlines()
    assert (p.returncode, lines[0], lines[-1]) == (
        1,
        "Target worksheet found: 超节点规划",
        "Script execution failed",
    )
    assert lines[1].startswith("Error: ") and "no CSV written" in lines[1]
    assert detail in lines[2]
    assert not out.exists()


def test_unreachable_cluster_is_one_error_line(tmp_path: Path, twin: Twin) -> None:
    with socket.socket() as s:  # a loopback port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    csv = write_csv(tmp_path / "c.csv", f"nodeName,{G}\nn1,0\n")
    p = twin(label_tool_main, "apply", "--config-path", str(csv), "--kubeconfig", str(kubeconfig))
    lines = p.stdout.splitlines()
    assert (p.returncode, p.stderr, len(lines)) == (1, "", 2), p.stdout + p.stderr
    assert lines[1].startswith("Error: list nodes: no answer from the API server at 127.0.0.1:")
    assert lines[1].endswith("nothing was changed")
