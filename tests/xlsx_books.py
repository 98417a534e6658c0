"""Workbooks written by hand for the .xlsx reader's tests, as Excel lays them out."""

from __future__ import annotations

import zipfile
from pathlib import Path

NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PR = "http://schemas.openxmlformats.org/package/2006/relationships"


def book(
    path: Path,
    sheets: dict[str, str],
    *,
    strings: str | None = None,
    absolute: bool = False,
) -> Path:
    """A workbook of ``sheets`` (title → the XML inside <worksheet>), as Excel lays it out:
    the sheet parts are numbered in reverse to show that the relationships, not the order,
    tell which part is which sheet."""
    n = len(sheets)
    names = "".join(
        f'<sheet name="{t}" sheetId="{i + 1}" r:id="rId{i + 1}"/>' for i, t in enumerate(sheets)
    )
    prefix = "/xl/" if absolute else ""
    rels = "".join(
        f'<Relationship Id="rId{i + 1}" Target="{prefix}worksheets/sheet{n - i}.xml" '
        f'Type="{R}/worksheet"/>'
        for i in range(n)
    )
    rels += f'<Relationship Id="rIdS" Target="sharedStrings.xml" Type="{R}/sharedStrings"/>'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "_rels/.rels",
            f'<Relationships xmlns="{PR}"><Relationship Id="rId1" Type="{R}/officeDocument" '
            'Target="xl/workbook.xml"/></Relationships>',
        )
        z.writestr(
            "xl/workbook.xml",
            f'<workbook xmlns="{NS}" xmlns:r="{R}"><sheets>{names}</sheets></workbook>',
        )
        z.writestr(
            "xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{PR}">{rels}</Relationships>'
        )
        for i, body in enumerate(sheets.values()):
            z.writestr(
                f"xl/worksheets/sheet{n - i}.xml",
                f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{NS}">{body}</worksheet>',
            )
        if strings is not None:
            z.writestr("xl/sharedStrings.xml", f'<sst xmlns="{NS}">{strings}</sst>')
    return path


# A sheet whose used range claims every cell (Excel does this after a stray format): two
# real rows, 200,000 formatted empty cells in column XFD and one value in the last cell.
HUGE_USED_RANGE = (
    '<dimension ref="A1:XFD1048576"/><sheetData>'
    '<row r="1"><c r="A1" t="inlineStr"><is><t>主机名称</t></is></c>'
    '<c r="B1" t="inlineStr"><is><t>机框编号</t></is></c></row>'
    '<row r="2"><c r="A2" t="inlineStr"><is><t>n1</t></is></c><c r="B2"><v>1</v></c></row>'
    + "".join(f'<row r="{r}"><c r="XFD{r}" s="1"/></row>' for r in range(3, 200_000))
    + '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>x</t></is></c></row>'
    "</sheetData>"
)
