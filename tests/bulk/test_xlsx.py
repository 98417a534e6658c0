"""The small .xlsx reader, on workbooks whose XML is written here by hand (as Excel and
other programs write it), and on openpyxl's output."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest

from labeler.base.errors import InputError
from labeler.bulk.lld import read_lld
from labeler.bulk.xlsx import Workbook, XlsxError, column_letter, split_ref
from tests.xlsx_books import HUGE_USED_RANGE, book


def test_references_and_letters() -> None:
    assert split_ref("B3") == (3, 2)
    assert split_ref("xfd1048576") == (1048576, 16384)
    assert [column_letter(c) for c in (1, 26, 27, 256, 16384)] == ["A", "Z", "AA", "IV", "XFD"]
    for bad in ("", "B", "3", "B0"):
        with pytest.raises(ValueError):
            split_ref(bad)


def test_every_kind_of_cell_and_the_sheet_the_relationships_name(tmp_path: Path) -> None:
    strings = (
        "<si><t>plain</t></si>"
        '<si><r><rPr><b/></rPr><t xml:space="preserve">主机 </t></r><r><t>名称</t></r>'
        "<rPh sb='0' eb='1'><t>しゅ</t></rPh></si>"
        "<si><t>a_x000D_b</t></si>"
    )
    row1 = '<c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c>'
    row2 = (
        '<c r="A2"><v>1</v></c><c r="B2"><v>1.0</v></c><c r="C2"><v>1E3</v></c>'
        '<c r="D2" t="b"><v>1</v></c><c r="E2" t="e"><v>#REF!</v></c>'
        '<c r="F2" t="inlineStr"><is><r><t>in</t></r><r><t>line</t></r></is></c>'
        '<c r="G2" t="str"><f>LOWER("N2")</f><v>n2</v></c><c r="H2"><f>C2+1</f><v></v></c>'
        '<c r="I2" s="3"/>'
    )
    sheets = {
        "封面": '<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>LLD</t></is></c></row>'
        "</sheetData>",
        "A3超节点规划": '<dimension ref="A1:XFD1048576"/><sheetData>'
        f'<row r="1">{row1}</row><row r="2">{row2}</row></sheetData>'
        '<mergeCells count="2"><mergeCell ref="B3:B5"/><mergeCell ref="D7"/></mergeCells>',
    }
    for absolute in (False, True):
        with Workbook(
            book(tmp_path / f"a{absolute}.xlsx", sheets, strings=strings, absolute=absolute)
        ) as wb:
            assert wb.sheetnames == ["封面", "A3超节点规划"]
            assert wb.sheet("封面").values == {(1, 1): "LLD"}
            s = wb.sheet("A3超节点规划")
        assert s.values == {
            (1, 1): "plain",
            (1, 2): "主机 名称",
            (1, 3): "a\rb",
            (2, 1): 1,
            (2, 2): 1.0,
            (2, 3): 1000.0,
            (2, 4): True,
            (2, 5): "#REF!",
            (2, 6): "inline",
            (2, 7): "n2",
        }
        assert s.formulas == {(2, 7): '=LOWER("N2")', (2, 8): "=C2+1"}
        assert s.merges == [(3, 2, 5, 2), (7, 4, 7, 4)]


def test_rows_and_cells_without_references_and_shared_formulas(tmp_path: Path) -> None:
    body = (
        "<sheetData><row><c><v>1</v></c><c><v>2</v></c></row>"
        '<row r="4"><c t="inlineStr"><is><t>x</t></is></c>'
        '<c r="C4"><v>3</v></c><c><v>4</v></c></row>'
        '<row r="5"><c r="B5"><f t="shared" ref="B5:B6" si="0">A5*2</f></c></row>'
        '<row r="6"><c r="B6"><f t="shared" si="0"/></c></row></sheetData>'
    )
    with Workbook(book(tmp_path / "b.xlsx", {"s": body})) as wb:
        s = wb.sheet("s")
    assert s.values == {(1, 1): 1, (1, 2): 2, (4, 1): "x", (4, 3): 3, (4, 4): 4}
    assert s.formulas == {(5, 2): "=A5*2", (6, 2): "=A5*2 (shared from B5)"}


def test_openpyxl_workbooks_read_alike(tmp_path: Path) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "超节点规划"
    rows = [["主机名称", "机框编号", None, 2.5], [None], ["n1", 1, True, "#N/A"]]
    for row in rows:
        ws.append(row)
    ws["B4"] = "=B3+1"
    ws.merge_cells("A5:C5")
    wb.save(tmp_path / "o.xlsx")
    with Workbook(tmp_path / "o.xlsx") as ours:
        s = ours.sheet("超节点规划")
    theirs = openpyxl.load_workbook(tmp_path / "o.xlsx", data_only=True)["超节点规划"]
    expected = {
        (c.row, c.column): c.value for row in theirs.iter_rows() for c in row if c.value is not None
    }
    assert s.values == expected
    assert s.formulas == {(4, 2): "=B3+1"}
    assert s.merges == [(5, 1, 5, 3)]


def test_a_huge_used_range_costs_only_the_cells_that_exist(tmp_path: Path) -> None:
    p = book(tmp_path / "big.xlsx", {"超节点规划": HUGE_USED_RANGE})
    table = read_lld(p, tree_name="t")
    assert [h.name for h in table.hosts] == ["n1"]
    (warning,) = table.warnings
    assert "ignored 1 cell(s) outside A1:IV100000 (first: XFD1048576 holds 'x')" in warning


@pytest.mark.parametrize(
    ("part", "data", "message"),
    [
        (
            "xl/worksheets/sheet1.xml",
            b"<worksheet><sheetData><row r='1'><c r=",
            "sheet 'A3超节点规划' is not readable",
        ),
        ("xl/workbook.xml", b"<workbook><sheets>", "xl/workbook.xml is not readable"),
        ("xl/sharedStrings.xml", b"<sst><si>", "xl/sharedStrings.xml is not readable"),
        (
            "xl/worksheets/sheet1.xml",
            b'<worksheet><sheetData><row><c r="1A"/></row></sheetData></worksheet>',
            "sheet 'A3超节点规划' is not readable",
        ),
        (
            "xl/worksheets/sheet1.xml",
            b'<worksheet><sheetData><row><c r="A1" t="s"><v>7</v></c></row></sheetData>'
            b"</worksheet>",
            "sheet 'A3超节点规划' is not readable",
        ),
    ],
)
def test_broken_parts_are_one_error_naming_the_file(
    tmp_path: Path, part: str, data: bytes, message: str
) -> None:
    p = book(
        tmp_path / "x.xlsx",
        {"A3超节点规划": '<sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData>'},
        strings="<si><t>主机名称</t></si>",
    )
    with zipfile.ZipFile(p) as z:
        items = {n: z.read(n) for n in z.namelist()}
    items[part] = data
    with zipfile.ZipFile(p, "w") as z:
        for name, body in items.items():
            z.writestr(name, body)
    with pytest.raises(InputError) as e:
        read_lld(p, tree_name="t")
    (problem,) = e.value.problems
    assert problem.startswith(f"{p}: ") and message in problem, problem
    assert "\n" not in problem


def test_not_a_zip_and_a_missing_part(tmp_path: Path) -> None:
    (tmp_path / "t.xlsx").write_bytes(b"PK\x03\x04 cut off")
    with pytest.raises(XlsxError, match=r"not an \.xlsx workbook"):
        Workbook(tmp_path / "t.xlsx")
    with zipfile.ZipFile(tmp_path / "e.xlsx", "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(XlsxError, match=r"not an \.xlsx workbook \(.*xl/workbook\.xml"):
        Workbook(tmp_path / "e.xlsx")
