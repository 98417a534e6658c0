"""The Ascend LLD workbook reader, on workbooks generated here with openpyxl.

openpyxl writes formulas without a computed value; ``with_cached_values`` rewrites the
sheet XML to add the value Excel would have cached, so both cases are tested.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from labeler.base.errors import InputError
from labeler.bulk.lld import read_lld, write_lld_csv
from labeler.core.sheet import read_label_csv

G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"


def workbook(
    path: Path, rows: list[list[Any]], *, title: str = "A3超节点规划", before: int = 0
) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "封面"  # a cover sheet first, as real LLDs have
    ws.append(["LLD"])
    for i in range(before):
        wb.create_sheet(f"其他{i}")
    plan = wb.create_sheet(title)
    for row in rows:
        plan.append(row)
    wb.save(path)
    return path


def with_cached_values(path: Path, values: dict[str, Any]) -> None:
    """Give formula cells (by reference, e.g. 'C3') the value Excel would have cached."""
    with zipfile.ZipFile(path) as z:
        items = {n: z.read(n) for n in z.namelist()}
    for name, data in items.items():
        if not name.startswith("xl/worksheets/sheet"):
            continue
        text = data.decode()
        for ref, value in values.items():
            kind = ' t="str"' if isinstance(value, str) else ""
            text = re.sub(
                rf'<c r="{ref}"([^>]*)>(<f>[^<]*</f>)<v\s*/>',
                rf'<c r="{ref}"\1{kind}>\2<v>{value}</v>',
                text,
            )
        items[name] = text.encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in items.items():
            z.writestr(name, data)


def hosts(path: Path, **kw: Any) -> list[tuple[str, int, int]]:
    t = read_lld(path, tree_name=kw.pop("tree_name", "tree1"), **kw)
    return [(h.name, h.frame, h.group) for h in t.hosts]


def errors(path: Path, **kw: Any) -> list[str]:
    with pytest.raises(InputError) as e:
        read_lld(path, tree_name=kw.pop("tree_name", "tree1"), **kw)
    return e.value.problems


def test_simple_layout_and_group_ids(tmp_path: Path) -> None:
    p = workbook(
        tmp_path / "a.xlsx",
        [["主机名称", "机框编号"], ["node-1", 1], ["node-2", 12], ["node-3", 13], ["node-4", 25]],
    )
    assert hosts(p) == [("node-1", 1, 0), ("node-2", 12, 0), ("node-3", 13, 1), ("node-4", 25, 2)]
    assert hosts(p, group_per_rack=4) == [
        ("node-1", 1, 0),
        ("node-2", 12, 2),
        ("node-3", 13, 3),
        ("node-4", 25, 6),
    ]


def test_headers_on_a_lower_row_other_columns_and_extra_columns(tmp_path: Path) -> None:
    rows: list[list[Any]] = [["超节点规划表"], [], ["说明: ..."]]
    rows += [[None, "序号", "机框编号", "IP", "主机 名称\n"]]  # header text wraps in Excel
    rows += [[None, 1, "3", "10.0.0.1", "host-a"], [None, 2, 3.0, "10.0.0.2", "host-b"]]
    p = workbook(tmp_path / "b.xlsx", rows, title="2.超节点规划(A3)", before=2)
    assert hosts(p) == [("host-a", 3, 0), ("host-b", 3, 0)]


def test_blank_rows_inside_the_data_are_skipped_not_the_end(tmp_path: Path) -> None:
    rows: list[list[Any]] = [["主机名称", "机框编号"], ["n1", 1], [None, None], ["n2", 2]]
    rows += [["", "  "], ["n3", 14], [], []]
    p = workbook(tmp_path / "c.xlsx", rows)
    assert hosts(p) == [("n1", 1, 0), ("n2", 2, 0), ("n3", 14, 1)]


def test_a_half_blank_row_is_an_error_not_a_shift(tmp_path: Path) -> None:
    rows: list[list[Any]] = [["主机名称", "机框编号"], ["n1", 1], ["n2", None], [None, 3]]
    p = workbook(tmp_path / "d.xlsx", rows)
    ps = errors(p)
    assert ps[0].endswith(
        "'A3超节点规划'!B3: no frame number on this row, but 'A3超节点规划'!A3 has 'n2'; "
        "fill it in or clear the row"
    )
    assert "'A3超节点规划'!A4: no host name on this row" in ps[1]


def test_formulas_with_cached_values_are_read(tmp_path: Path) -> None:
    rows: list[list[Any]] = [["主机名称", "机框编号", "base"], ["n1", "=C2+1", 12]]
    rows += [['=LOWER("N2")', "=C3*2", 7]]
    p = workbook(tmp_path / "e.xlsx", rows)
    with_cached_values(p, {"B2": 13, "A3": "n2", "B3": 14})
    assert hosts(p) == [("n1", 13, 1), ("n2", 14, 1)]


def test_formula_without_cached_value_names_the_cell(tmp_path: Path) -> None:
    rows: list[list[Any]] = [["主机名称", "机框编号", "base"], ["n1", "=C2+1", 12], ["n2", 3, 1]]
    p = workbook(tmp_path / "f.xlsx", rows)
    (problem,) = errors(p)
    assert "'A3超节点规划'!B2: holds the formula =C2+1 but no computed value" in problem
    assert "open and save it in Excel or LibreOffice" in problem


def test_bad_frames_duplicates_and_bad_names_are_all_reported(tmp_path: Path) -> None:
    rows: list[list[Any]] = [["主机名称", "机框编号"]]
    rows += [["n1", "A3"], ["n2", 0], ["n3", 2.5], ["n1", 1], ["n4", 1], ["n4", 2]]
    rows += [["Node_5", 1], ["NODE-6", 1], ["n7", "#REF!"], [True, 1]]
    ps = errors(workbook(tmp_path / "g.xlsx", rows))
    text = "\n".join(ps)
    assert "!B2: frame number 'A3' is not a whole number" in text
    assert "!B3: frame number 0 is below 1" in text
    assert "!B4: frame number 2.5 is not a whole number" in text
    assert "!A7: host 'n4' is already listed at 'A3超节点规划'!A6" in text
    assert "!A8: host name 'Node_5' is not a valid node name" in text
    assert "!A9: host name 'NODE-6' is not a valid node name" in text
    assert "node names are lowercase (the kubelet lowercases the host name): 'node-6'" in text
    assert "!B10: the frame number cell shows the Excel error #REF!" in text
    assert "!A11: host name 'True'" in text
    assert "!A5" not in text  # n1 again, but its first row was invalid: not a duplicate


def test_sheet_or_headers_missing_and_empty_sheet(tmp_path: Path) -> None:
    p = workbook(tmp_path / "h.xlsx", [["主机名称", "机框编号"], ["n1", 1]], title="规划")
    (problem,) = errors(p)
    assert "no sheet whose name contains '超节点规划'" in problem
    assert "'封面', '规划'" in problem

    p = workbook(tmp_path / "i.xlsx", [["主机名称", "机框"], ["n1", 1]])
    (problem,) = errors(p)
    assert "header cell(s) '机框编号' not found in rows 1-100" in problem

    rows: list[list[Any]] = [[] for _ in range(100)] + [["主机名称", "机框编号"], ["n1", 1]]
    (problem,) = errors(workbook(tmp_path / "j.xlsx", rows))
    assert "not found in rows 1-100" in problem

    (problem,) = errors(workbook(tmp_path / "k.xlsx", []))
    assert "sheet 'A3超节点规划' is empty" in problem

    (problem,) = errors(workbook(tmp_path / "l.xlsx", [["主机名称", "机框编号"], [None, None]]))
    assert "no host rows under the headers at 'A3超节点规划'!A1 and 'A3超节点规划'!B1" in problem


def test_options_and_file_are_checked(tmp_path: Path) -> None:
    p = workbook(tmp_path / "m.xlsx", [["主机名称", "机框编号"], ["n1", 1]])
    assert "--topotree-name is empty" in errors(p, tree_name="")[0]
    assert "not a valid label value" in errors(p, tree_name="a b")[0]
    assert "--group-per-rack must be at least 1" in errors(p, group_per_rack=0)[0]
    assert "no such file; check --input" in errors(tmp_path / "nope.xlsx")[0]
    (tmp_path / "x.xlsx").write_text("not a zip")
    assert "not an .xlsx workbook" in errors(tmp_path / "x.xlsx")[0]


def test_csv_has_no_bom_and_apply_reads_it(tmp_path: Path) -> None:
    p = workbook(tmp_path / "n.xlsx", [["主机名称", "机框编号"], ["n1", 1], [1001, 13]])
    table = read_lld(p, tree_name="prod")
    out = tmp_path / "out.csv"
    assert write_lld_csv(table, out) == 2
    data = out.read_bytes()
    assert data == f"nodeName,{G},{T}\nn1,0,prod\n1001,1,prod\n".encode()
    sheet = read_label_csv(out)
    assert sheet.rows[1].values == {G: "1", T: "prod"}


def test_merged_frame_cells_and_a_note_below_the_table(tmp_path: Path) -> None:
    rows: list[list[Any]] = [["主机名称", "机框编号"], ["n1", 1], ["n2", None], ["n3", 13]]
    rows += [[], ["n4", 13], [], ["注：见附件", None]]
    p = workbook(tmp_path / "m.xlsx", rows)
    wb = openpyxl.load_workbook(p)
    wb["A3超节点规划"].merge_cells("B2:B3")
    wb.save(p)
    table = read_lld(p, tree_name="t")
    assert [(h.name, h.frame) for h in table.hosts] == [
        ("n1", 1),
        ("n2", 1),
        ("n3", 13),
        ("n4", 13),
    ]
    (warning,) = table.warnings
    assert "the table ends at row 6; ignored row 8 below it: not host rows" in warning
    assert "'A3超节点规划'!A8 holds '注：见附件'" in warning

    # Without the merge, n2's blank frame is an error, as before.
    (problem,) = errors(workbook(tmp_path / "n.xlsx", rows))
    assert "'A3超节点规划'!B3: no frame number on this row" in problem


def test_group_offset_keeps_ids_unique_across_trees(tmp_path: Path) -> None:
    # MindCluster wants group IDs unique in the cluster; Volcano's label discovery would
    # merge group 0 of two trees into one HyperNode
    p = workbook(tmp_path / "a.xlsx", [["主机名称", "机框编号"], ["node-1", 1], ["node-2", 13]])
    assert hosts(p, group_offset=2) == [("node-1", 1, 2), ("node-2", 13, 3)]
    assert any("--group-offset" in e for e in errors(p, group_offset=-1))
