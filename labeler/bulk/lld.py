"""Ascend LLD workbook (.xlsx) → label CSV for the ``ascend-superpod`` profile.

The LLD (low-level design) workbook's sheet named like ``…超节点规划…`` (SuperPoD plan)
lists every host (``主机名称``, host name) with its frame (``机框编号``, frame number, 1-based).
A group is ``--group-per-rack`` consecutive frames: groupid = offset + (frame − 1) // g.
With several trees (one workbook each), ``--group-offset`` keeps group IDs unique in the
cluster, as MindCluster asks (Volcano's label discovery would merge equal IDs of two trees).

Differences from MindCluster's ``lld_parser.py``, each a bug there:
- rows are read as rows: a blank host or frame cell is an error naming the cell, not a
  silent shift that pairs every later host with the wrong frame;
- blank rows inside the table are skipped, not the end of the data;
- a formula cell without a cached value (a workbook written by a program that does not
  compute formulas) is an error naming the cell, not a frame of 0;
- the CSV has no BOM, so both our ``apply`` and MindCluster's label tool read it.
"""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labeler.bulk.sheet import write_label_csv
from labeler.errors import InputError
from labeler.labels import dns1123_subdomain_problems, value_problems
from labeler.profiles import ASCEND_GROUP, ASCEND_TREE_LABEL

log = logging.getLogger(__name__)

SHEET_MARK = "超节点规划"
HOST_HEADER = "主机名称"
FRAME_HEADER = "机框编号"
HEADER_ROWS = 100
DEFAULT_GROUP_PER_RACK = 12
CSV_KEYS = (ASCEND_GROUP, ASCEND_TREE_LABEL)
_EXCEL_ERRORS = ("#REF!", "#VALUE!", "#N/A", "#NAME?", "#DIV/0!", "#NUM!", "#NULL!")


@dataclass(frozen=True)
class LldHost:
    name: str
    frame: int
    group: int


@dataclass(frozen=True)
class LldTable:
    """The hosts of one LLD sheet, validated, with their group IDs."""

    path: str
    sheet: str
    hosts: tuple[LldHost, ...]
    tree_name: str
    group_per_rack: int

    def rows(self) -> list[tuple[str, dict[str, str]]]:
        return [
            (h.name, {ASCEND_GROUP: str(h.group), ASCEND_TREE_LABEL: self.tree_name})
            for h in self.hosts
        ]


def _col_letter(col: int) -> str:
    from openpyxl.utils import get_column_letter

    return str(get_column_letter(col))


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _norm(value: Any) -> str:
    """A header cell's text without any whitespace (Excel headers often wrap lines)."""
    return "".join(str(value).split()) if value is not None else ""


def _open(path: Path, *, data_only: bool) -> Any:
    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        return load_workbook(path, data_only=data_only, read_only=True)
    except (InvalidFileException, zipfile.BadZipFile, KeyError) as e:
        raise InputError(
            f"{path}: not an .xlsx workbook ({e}); save the LLD as 'Excel Workbook (*.xlsx)'"
        ) from e
    except OSError as e:
        raise InputError(f"{path}: cannot read the workbook: {e.strerror or e}") from e


def check_options(tree_name: str, group_per_rack: int, group_offset: int = 0) -> list[str]:
    problems = []
    if not tree_name:
        problems.append(
            "--topotree-name is empty; give the tree name (the huawei.com/topotree value, "
            "e.g. 'default'); Volcano rejects an empty tree label"
        )
    else:
        why = value_problems(tree_name)
        if why:
            problems.append(
                f"--topotree-name {tree_name!r} is not a valid label value: {'; '.join(why)}"
            )
    if group_per_rack < 1:
        problems.append(f"--group-per-rack must be at least 1, got {group_per_rack}")
    if group_offset < 0:
        problems.append(f"--group-offset must be 0 or more, got {group_offset}")
    return problems


def read_lld(
    path: str | Path,
    *,
    tree_name: str,
    group_per_rack: int = DEFAULT_GROUP_PER_RACK,
    group_offset: int = 0,
) -> LldTable:
    """Read and validate the LLD workbook; InputError lists every problem with its cell."""
    problems = check_options(tree_name, group_per_rack, group_offset)
    if problems:
        raise InputError(problems)
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file; check --input")
    wb = _open(p, data_only=True)
    try:
        title = next((name for name in wb.sheetnames if SHEET_MARK in name), None)
        if title is None:
            raise InputError(
                f"{p}: no sheet whose name contains {SHEET_MARK!r}; sheets: "
                f"{', '.join(repr(n) for n in wb.sheetnames) or 'none'}. Rename the SuperPoD "
                "plan sheet or pick the right workbook"
            )
        ws = wb[title]
        ws.reset_dimensions()  # some writers record a wrong size; read what is there
        rows = [tuple(r) for r in ws.iter_rows(min_col=1, values_only=True)]
    finally:
        wb.close()
    return _table(p, title, rows, tree_name, group_per_rack, group_offset)


def _find_header(rows: Sequence[Sequence[Any]], text: str) -> tuple[int, int] | None:
    for r, row in enumerate(rows[:HEADER_ROWS], start=1):
        for c, value in enumerate(row, start=1):
            if isinstance(value, str) and _norm(value) == text:
                return r, c
    return None


def _cell(row: Sequence[Any], col: int) -> Any:
    return row[col - 1] if col - 1 < len(row) else None


def _table(
    path: Path,
    title: str,
    rows: list[tuple[Any, ...]],
    tree_name: str,
    group_per_rack: int,
    group_offset: int = 0,
) -> LldTable:
    where = f"{path}: sheet {title!r}"
    if not any(any(not _blank(v) for v in row) for row in rows):
        raise InputError(f"{where} is empty; fill in the SuperPoD plan or pick the right sheet")
    host_at = _find_header(rows, HOST_HEADER)
    frame_at = _find_header(rows, FRAME_HEADER)
    missing = [h for h, at in ((HOST_HEADER, host_at), (FRAME_HEADER, frame_at)) if at is None]
    if missing or host_at is None or frame_at is None:
        raise InputError(
            f"{where}: header cell(s) {', '.join(repr(m) for m in missing)} not found in "
            f"rows 1-{HEADER_ROWS}; the sheet needs a {HOST_HEADER!r} (host name) column "
            f"and a {FRAME_HEADER!r} (frame number) column"
        )
    (hr, hc), (fr, fc) = host_at, frame_at

    def ref(row: int, col: int) -> str:
        return f"'{title}'!{_col_letter(col)}{row}"

    first = max(hr, fr) + 1
    data = range(first, len(rows) + 1)
    # An uncomputed formula reads as blank: find those first, to name them instead of
    # skipping the row or reporting a missing value.
    blanks = [(r, c) for r in data for c in (hc, fc) if _blank(_cell(rows[r - 1], c))]
    formulas = _formula_cells(path, title, blanks) if blanks else {}
    problems: list[str] = []
    hosts: list[LldHost] = []
    seen: dict[str, str] = {}
    for r in data:
        row = rows[r - 1]
        uncomputed = [(c, formulas[(r, c)]) for c in (hc, fc) if (r, c) in formulas]
        for c, formula in uncomputed:
            problems.append(
                f"{path}: {ref(r, c)}: holds the formula {formula} but no computed value "
                "(the workbook was saved by a program that does not calculate formulas); "
                "open and save it in Excel or LibreOffice, or replace the formula by its value"
            )
        if uncomputed:
            continue
        host, frame = _cell(row, hc), _cell(row, fc)
        if _blank(host) and _blank(frame):
            continue
        if _blank(host) or _blank(frame):
            col, other = (hc, fc) if _blank(host) else (fc, hc)
            what = "host name" if col == hc else "frame number"
            problems.append(
                f"{path}: {ref(r, col)}: no {what} on this row, but {ref(r, other)} has "
                f"{_cell(row, other)!r}; fill it in or clear the row"
            )
            continue
        name, why = _host(host)
        if why:
            problems.append(f"{path}: {ref(r, hc)}: {why}")
        frame_no, why = _frame(frame)
        if why:
            problems.append(f"{path}: {ref(r, fc)}: {why}")
        if name is None or frame_no is None:
            continue
        if name in seen:
            problems.append(
                f"{path}: {ref(r, hc)}: host {name!r} is already listed at {seen[name]}; "
                "keep one row per host"
            )
            continue
        seen[name] = ref(r, hc)
        hosts.append(LldHost(name, frame_no, group_offset + (frame_no - 1) // group_per_rack))
    if not problems and not hosts:
        problems.append(
            f"{where}: no host rows under the headers at {ref(hr, hc)} and {ref(fr, fc)}; "
            "fill in the SuperPoD plan"
        )
    if problems:
        raise InputError(problems, heading=f"{path}: {len(problems)} problem(s); no CSV written:")
    return LldTable(str(path), title, tuple(hosts), tree_name, group_per_rack)


def _host(value: Any) -> tuple[str | None, str | None]:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    name = str(value).strip()
    if name in _EXCEL_ERRORS:
        return None, f"the host name cell shows the Excel error {name}; fix its formula"
    why = dns1123_subdomain_problems(name)
    if not why:
        return name, None
    hint = "use the node name shown by 'kubectl get nodes'"
    if not dns1123_subdomain_problems(name.lower()):
        hint = f"node names are lowercase (the kubelet lowercases the host name): {name.lower()!r}"
    return None, f"host name {name!r} is not a valid node name: {'; '.join(why)}; {hint}"


def _frame(value: Any) -> tuple[int | None, str | None]:
    number: float | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not number.is_integer():
        shown = str(value).strip()
        if shown in _EXCEL_ERRORS:
            return None, f"the frame number cell shows the Excel error {shown}; fix its formula"
        return None, f"frame number {value!r} is not a whole number; frames are numbered 1, 2, …"
    if number < 1:
        return None, f"frame number {int(number)} is below 1; frames are numbered from 1"
    return int(number), None


def _formula_cells(
    path: Path, title: str, cells: Iterable[tuple[int, int]]
) -> dict[tuple[int, int], str]:
    """Which of ``cells`` hold a formula (read from the workbook without cached values)."""
    wanted = set(cells)
    if not wanted:
        return {}
    rows = {r for r, _ in wanted}
    cols = {c for _, c in wanted}
    found: dict[tuple[int, int], str] = {}
    wb = _open(path, data_only=False)
    try:
        ws = wb[title]
        ws.reset_dimensions()
        for r, row in enumerate(
            ws.iter_rows(min_row=1, max_row=max(rows), min_col=1, values_only=True), start=1
        ):
            if r not in rows:
                continue
            for c in cols:
                value = _cell(row, c)
                if (r, c) in wanted and value is not None:
                    text = getattr(value, "text", value)  # ArrayFormula keeps it in .text
                    if isinstance(text, str) and text.startswith("="):
                        found[(r, c)] = text
    finally:
        wb.close()
    return found


def write_lld_csv(table: LldTable, output: str | Path) -> int:
    """Write the table as ``nodeName,huawei.com/topotree.groupid,huawei.com/topotree``.

    No BOM (MindCluster's label tool rejects one). Returns the number of rows.
    """
    out = Path(output)
    try:
        with out.open("w", encoding="utf-8", newline="") as f:
            return write_label_csv(f, CSV_KEYS, table.rows())
    except OSError as e:
        raise InputError(f"{out}: cannot write the CSV: {e.strerror or e}") from e


def default_output(input_path: str | Path) -> str:
    """MindCluster's default: ``<input name without extension>_output.csv`` in the cwd."""
    return f"{Path(input_path).stem}_output.csv"
