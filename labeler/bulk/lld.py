"""Ascend LLD workbook (.xlsx) → label CSV for the ``ascend-superpod`` profile.

The LLD (low-level design) workbook's sheet named like ``…超节点规划…`` (SuperPoD plan)
lists every host (``主机名称``, host name) with its frame (``机框编号``, frame number, 1-based).
A group is ``--group-per-rack`` consecutive frames: groupid = offset + (frame − 1) // g.
With several trees (one workbook each), ``--group-offset`` keeps group IDs unique in the
cluster, as MindCluster asks (Volcano's label discovery would merge equal IDs of two trees).

Differences from MindCluster's ``lld_parser.py``, each a bug there:
- rows are read as rows: a blank host or frame cell is an error naming the cell, not a
  silent shift that pairs every later host with the wrong frame;
- a cell merged down over several rows (a frame number drawn over its hosts) applies to
  every row it spans, not only the first;
- a blank row ends the table only when what follows it is not host rows (a note such as
  ``注：…``), and what was ignored is reported; blank rows between host rows are skipped;
- a formula cell without a cached value (a workbook written by a program that does not
  compute formulas) is an error naming the cell, not a frame of 0;
- the CSV has no BOM, so both our ``apply`` and MindCluster's label tool read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from labeler.base.errors import FlagValuesError, InputError
from labeler.base.logs import logger
from labeler.bulk.xlsx import SheetData, Workbook, XlsxError, column_letter
from labeler.core.labels import dns1123_subdomain_problems, value_problems
from labeler.core.profiles import ASCEND_GROUP, ASCEND_TREE_LABEL
from labeler.core.sheet import write_label_csv_file

log = logger(__name__)

SHEET_MARK = "超节点规划"
HOST_HEADER = "主机名称"
FRAME_HEADER = "机框编号"
HEADER_ROWS = 100
# Where a plan sheet's table can be: a SuperPoD plan has a few thousand hosts and a few
# dozen columns. Cells beyond are reported, not read (see _rows).
MAX_ROWS = 100_000
MAX_COLUMNS = 256
DEFAULT_GROUP_PER_RACK = 12
CSV_KEYS = (ASCEND_GROUP, ASCEND_TREE_LABEL)
_EXCEL_ERRORS = ("#REF!", "#VALUE!", "#N/A", "#NAME?", "#DIV/0!", "#NUM!", "#NULL!")


class LldError(InputError):
    """A problem with the workbook; ``sheet`` is the plan sheet's name once it was found."""

    def __init__(
        self, problems: list[str] | str, *, heading: str | None = None, sheet: str | None = None
    ) -> None:
        super().__init__(problems, heading=heading)
        self.sheet = sheet


class NoWorkbook(LldError):
    """The input file does not exist."""


class NoPlanSheet(LldError):
    """No sheet's name contains SHEET_MARK."""


class MissingHeaders(LldError):
    """The plan sheet lacks a header cell; ``missing`` in the order host, frame."""

    def __init__(self, problem: str, *, sheet: str, missing: Sequence[str]) -> None:
        super().__init__(problem, sheet=sheet)
        self.missing = tuple(missing)


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
    warnings: tuple[str, ...] = ()  # rows below the table that were ignored, and why

    def rows(self) -> list[tuple[str, dict[str, str]]]:
        return [
            (h.name, {ASCEND_GROUP: str(h.group), ASCEND_TREE_LABEL: self.tree_name})
            for h in self.hosts
        ]


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _norm(value: Any) -> str:
    """A header cell's text without any whitespace (Excel headers often wrap lines)."""
    return "".join(str(value).split()) if value is not None else ""


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
        raise FlagValuesError(problems)
    p = Path(path)
    if not p.is_file():
        raise NoWorkbook(f"{p}: no such file; check --input")
    try:
        with Workbook(p) as wb:
            title = next((name for name in wb.sheetnames if SHEET_MARK in name), None)
            if title is None:
                raise NoPlanSheet(
                    f"{p}: no sheet whose name contains {SHEET_MARK!r}; sheets: "
                    f"{', '.join(repr(n) for n in wb.sheetnames) or 'none'}. Rename the "
                    "SuperPoD plan sheet or pick the right workbook"
                )
            sheet = wb.sheet(title)
    except XlsxError as e:
        raise LldError(e.problems, sheet=e.sheet) from e
    rows, outside = _rows(p, sheet)
    table = _table(p, sheet, rows, tree_name, group_per_rack, group_offset)
    if outside:
        table = replace(table, warnings=(*table.warnings, outside))
    return table


def _rows(path: Path, sheet: SheetData) -> tuple[list[tuple[Any, ...]], str]:
    """The sheet's values by row within MAX_ROWS × MAX_COLUMNS, and a warning about cells
    outside that area (they cannot be hosts, and a value at XFD1048576 must not make a
    million rows of 16,384 cells)."""
    width: dict[int, int] = {}
    outside: list[tuple[int, int]] = []
    for r, c in sheet.values:
        if r > MAX_ROWS or c > MAX_COLUMNS:
            outside.append((r, c))
        elif c > width.get(r, 0):
            width[r] = c
    rows: list[tuple[Any, ...]] = []
    get = sheet.values.get
    for r in range(1, max(width, default=0) + 1):
        rows.append(tuple(get((r, c)) for c in range(1, width.get(r, 0) + 1)))
    if not outside:
        return rows, ""
    r, c = min(outside)
    return rows, (
        f"{path}: sheet {sheet.title!r}: ignored {len(outside)} cell(s) outside "
        f"A1:{column_letter(MAX_COLUMNS)}{MAX_ROWS} (first: {column_letter(c)}{r} holds "
        f"{sheet.values[(r, c)]!r}); an LLD plan fits inside, so they cannot be hosts"
    )


def _find_header(rows: Sequence[Sequence[Any]], text: str) -> tuple[int, int] | None:
    for r, row in enumerate(rows[:HEADER_ROWS], start=1):
        for c, value in enumerate(row, start=1):
            if isinstance(value, str) and _norm(value) == text:
                return r, c
    return None


def _cell(row: Sequence[Any], col: int) -> Any:
    return row[col - 1] if col - 1 < len(row) else None


@dataclass(frozen=True)
class _Columns:
    """The host and frame columns of a plan sheet below their headers.

    ``filled``: cells hidden under a merge drawn down a column, with the merge's value;
    ``formulas``: the columns' blank cells that hold a formula without a computed value.
    """

    path: Path
    title: str
    rows: list[tuple[Any, ...]]
    host: tuple[int, int]  # (row, column) of the host header
    frame: tuple[int, int]
    first: int  # the first row below both headers (and below their merges)
    filled: dict[tuple[int, int], Any]
    formulas: dict[tuple[int, int], str]

    @property
    def columns(self) -> tuple[int, int]:
        return self.host[1], self.frame[1]

    def ref(self, row: int, col: int) -> str:
        return f"'{self.title}'!{column_letter(col)}{row}"

    def value(self, row: int, col: int) -> Any:
        return self.filled.get((row, col), _cell(self.rows[row - 1], col))

    def is_gap(self, r: int) -> bool:
        return all(_blank(self.value(r, c)) and (r, c) not in self.formulas for c in self.columns)

    def is_host_row(self, r: int) -> bool:
        hc, fc = self.columns
        if any((r, c) in self.formulas or _blank(self.value(r, c)) for c in (hc, fc)):
            return False
        return _host(self.value(r, hc))[1] is None and _frame(self.value(r, fc))[1] is None


def _table(
    path: Path,
    sheet: SheetData,
    rows: list[tuple[Any, ...]],
    tree_name: str,
    group_per_rack: int,
    group_offset: int = 0,
) -> LldTable:
    title = sheet.title
    cols = _columns(path, sheet, rows)
    data, warnings = _table_rows(cols)
    problems: list[str] = []
    hosts: list[LldHost] = []
    seen: dict[str, str] = {}
    for r in data:
        host = _host_row(cols, r, seen, problems)
        if host is not None:
            name, frame_no = host
            hosts.append(LldHost(name, frame_no, group_offset + (frame_no - 1) // group_per_rack))
    if not problems and not hosts:
        problems.append(
            f"{path}: sheet {title!r}: no host rows under the headers at {cols.ref(*cols.host)} "
            f"and {cols.ref(*cols.frame)}; fill in the SuperPoD plan"
        )
    if problems:
        raise LldError(
            problems, heading=f"{path}: {len(problems)} problem(s); no CSV written:", sheet=title
        )
    return LldTable(str(path), title, tuple(hosts), tree_name, group_per_rack, tuple(warnings))


def _columns(path: Path, sheet: SheetData, rows: list[tuple[Any, ...]]) -> _Columns:
    """Find the two headers, the first data row and what merges and formulas hide."""
    title = sheet.title
    where = f"{path}: sheet {title!r}"
    if not any(any(not _blank(v) for v in row) for row in rows):
        raise LldError(
            f"{where} is empty; fill in the SuperPoD plan or pick the right sheet", sheet=title
        )
    host_at = _find_header(rows, HOST_HEADER)
    frame_at = _find_header(rows, FRAME_HEADER)
    missing = [h for h, at in ((HOST_HEADER, host_at), (FRAME_HEADER, frame_at)) if at is None]
    if missing or host_at is None or frame_at is None:
        raise MissingHeaders(
            f"{where}: header cell(s) {', '.join(repr(m) for m in missing)} not found in "
            f"rows 1-{HEADER_ROWS}; the sheet needs a {HOST_HEADER!r} (host name) column "
            f"and a {FRAME_HEADER!r} (frame number) column",
            sheet=title,
            missing=missing,
        )
    (hr, hc), (fr, fc) = host_at, frame_at
    below = range(min(hr, fr) + 1, len(rows) + 1)
    merges: list[tuple[int, int, int, int]] = []
    if any(_blank(_cell(rows[r - 1], c)) for r in below for c in (hc, fc)):
        merges = sheet.merges
    # A header cell merged down ends where its merge ends.
    ends = {(r1, c1): r2 for r1, c1, r2, c2 in merges}
    first = max(ends.get((hr, hc), hr), ends.get((fr, fc), fr)) + 1
    filled = _merge_down(rows, merges, columns=(hc, fc), first=first)
    cols = _Columns(path, title, rows, host_at, frame_at, first, filled, {})
    # An uncomputed formula reads as blank: find those first, to name them instead of
    # skipping the row or reporting a missing value.
    blanks = [
        (r, c) for r in range(first, len(rows) + 1) for c in (hc, fc) if _blank(cols.value(r, c))
    ]
    return replace(cols, formulas={c: sheet.formulas[c] for c in blanks if c in sheet.formulas})


def _table_rows(cols: _Columns) -> tuple[list[int], list[str]]:
    """The rows of the table, and a warning for what below it was left out.

    Runs of rows between blank rows. The first run is the table; a later run is read only
    if every row of it is a host row, so a note under the table ends it (as in MindCluster's
    tool) while host rows after a stray blank row are not lost.
    """
    runs: list[list[int]] = [[]]
    for r in range(cols.first, len(cols.rows) + 1):
        if cols.is_gap(r):
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(r)
    runs = [run for run in runs if run]
    warnings: list[str] = []
    for i, run in enumerate(runs[1:], start=1):
        if not all(cols.is_host_row(r) for r in run):
            warnings.append(_ignored(cols, runs[i - 1][-1], run[0]))
            runs = runs[:i]
            break
    return [r for run in runs for r in run], warnings


def _host_row(
    cols: _Columns, r: int, seen: dict[str, str], problems: list[str]
) -> tuple[str, int] | None:
    """Row ``r``'s host name and frame number; None (and its problems) when it has none."""
    path, ref, value = cols.path, cols.ref, cols.value
    hc, fc = cols.columns
    uncomputed = [(c, cols.formulas[(r, c)]) for c in (hc, fc) if (r, c) in cols.formulas]
    for c, formula in uncomputed:
        problems.append(
            f"{path}: {ref(r, c)}: holds the formula {formula} but no computed value "
            "(the workbook was saved by a program that does not calculate formulas); "
            "open and save it in Excel or LibreOffice, or replace the formula by its value"
        )
    if uncomputed:
        return None
    host, frame = value(r, hc), value(r, fc)
    if _blank(host) or _blank(frame):
        col, other = (hc, fc) if _blank(host) else (fc, hc)
        what = "host name" if col == hc else "frame number"
        problems.append(
            f"{path}: {ref(r, col)}: no {what} on this row, but {ref(r, other)} has "
            f"{value(r, other)!r}; fill it in or clear the row"
        )
        return None
    name, why = _host(host)
    if why:
        problems.append(f"{path}: {ref(r, hc)}: {why}")
    frame_no, why = _frame(frame)
    if why:
        problems.append(f"{path}: {ref(r, fc)}: {why}")
    if name is None or frame_no is None:
        return None
    if name in seen:
        problems.append(
            f"{path}: {ref(r, hc)}: host {name!r} is already listed at {seen[name]}; "
            "keep one row per host"
        )
        return None
    seen[name] = ref(r, hc)
    return name, frame_no


def _ignored(cols: _Columns, last: int, start: int) -> str:
    """The warning for the rows from ``start`` on, left out after the table's last row."""
    rows = cols.rows
    end = max(r for r in range(start, len(rows) + 1) if any(not _blank(v) for v in rows[r - 1]))
    shown = next(
        (
            f"{cols.ref(r, c)} holds {v!r}"
            for r in range(start, end + 1)
            for c, v in enumerate(rows[r - 1], start=1)
            if not _blank(v)
        ),
        "",
    )
    span = f"row {start}" if end == start else f"rows {start}-{end}"
    return (
        f"{cols.path}: sheet {cols.title!r}: the table ends at row {last}; ignored {span} below "
        f"it: not host rows ({shown}); if they are hosts, delete the blank row(s) above them"
    )


def _merge_down(
    rows: Sequence[Sequence[Any]],
    merges: Iterable[tuple[int, int, int, int]],
    *,
    columns: Iterable[int],
    first: int,
) -> dict[tuple[int, int], Any]:
    """(row, column) → value for cells hidden under a merge drawn down one of ``columns``.

    Only merges within one column and starting at or below ``first``: a frame number drawn
    over its hosts' rows. A merge across columns (a title or a note) adds nothing.
    """
    wanted = set(columns)
    filled: dict[tuple[int, int], Any] = {}
    for r1, c1, r2, c2 in merges:
        if c1 != c2 or c1 not in wanted or r1 < first or r1 > len(rows):
            continue
        anchor = _cell(rows[r1 - 1], c1)
        for r in range(r1 + 1, r2 + 1):
            filled[(r, c1)] = anchor
    return filled


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


def write_lld_csv(table: LldTable, output: str | Path, *, line_end: str = "\n") -> int:
    """Write the table as ``nodeName,huawei.com/topotree.groupid,huawei.com/topotree``.

    No BOM (MindCluster's label tool rejects one). Returns the number of rows.
    """
    return write_label_csv_file(output, CSV_KEYS, table.rows(), line_end=line_end)


def default_output(input_path: str | Path) -> str:
    """MindCluster's default: ``<input name without extension>_output.csv`` in the cwd."""
    return f"{Path(input_path).stem}_output.csv"
