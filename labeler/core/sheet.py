"""The label CSV (MindCluster's format), read and validated as a whole before any write.

Format: the first header is exactly ``nodeName``; every other header is a label key, in
any order and any number. One row per node; an empty cell means "no value for this key on
this node". UTF-8 with or without a BOM (Excel's "CSV UTF-8" adds one; MindCluster's own
LLD parser writes one and then its label tool rejects it), CRLF or LF line ends.

Everything here is pure: ``parse_label_csv`` takes bytes and either returns the whole
sheet or raises one ``InputError`` listing every problem as ``file:line:column: what;
fix``, so an operator fixes the file in one pass instead of one error per run.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from labeler.base.errors import InputError
from labeler.base.files import read_bytes, write_atomic
from labeler.core.labels import (
    NODE_NAME_RE,
    dns1123_subdomain_problems,
    key_problems,
    value_problems,
)

NODE_NAME_HEADER = "nodeName"
BOM = "\ufeff"


@dataclass(frozen=True)
class CsvRow:
    """One node's row. ``values`` holds only the non-empty cells; ``empty`` the keys left blank."""

    node: str
    line: int
    values: Mapping[str, str] = field(default_factory=dict)
    empty: tuple[str, ...] = ()


@dataclass(frozen=True)
class Leniency:
    """Inputs the strict reader refuses but MindCluster's label tool accepts.

    Off for ``topology-labeler``; the MindCluster twin turns them on, because runbooks and
    sheets written for the original rely on them.

    - ``pad_short_rows``: a row with fewer cells than the header has empty cells at its end.
    - ``skip_unnamed_rows``: a row whose first cell is empty is skipped (listed in
      ``LabelSheet.unnamed``), not an error.
    - ``merge_repeats``: a row identical to an earlier row of the same node is dropped
      (listed in ``LabelSheet.repeats``); a *different* row for the same node stays an error.
    - ``strip_headers``: spaces around a header cell are ignored.
    """

    pad_short_rows: bool = False
    skip_unnamed_rows: bool = False
    merge_repeats: bool = False
    strip_headers: bool = False


STRICT = Leniency()
LIKE_MINDCLUSTER = Leniency(
    pad_short_rows=True, skip_unnamed_rows=True, merge_repeats=True, strip_headers=True
)


@dataclass(frozen=True)
class LabelSheet:
    """A validated label CSV: its label keys in column order and one row per node.

    ``unnamed``: record numbers (header = 1) of rows skipped for an empty node name;
    ``repeats``: (record number, line of the first row) of identical rows dropped. Both stay
    empty unless a :class:`Leniency` allows them.
    """

    path: str
    keys: tuple[str, ...]
    rows: tuple[CsvRow, ...]
    unnamed: tuple[int, ...] = ()
    repeats: tuple[tuple[int, int], ...] = ()

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(r.node for r in self.rows)


class TooFewRows(InputError):
    """The file has no header, or a header and nothing after it."""


class BadFirstHeader(InputError):
    """The first header is not ``nodeName`` (the message lists every other problem too)."""


# 100,000 nodes with a dozen labels each is about 20 MB.
MAX_CSV_BYTES = 64 << 20


def read_label_csv(
    path: str | Path,
    *,
    flag: str = "--config-path",
    level_keys: Sequence[str] = (),
    leniency: Leniency = STRICT,
) -> LabelSheet:
    """Read and validate a label CSV file; InputError lists every problem.

    ``flag`` is the option that named the file (for the hint when it is missing);
    ``level_keys`` and ``leniency`` are passed to :func:`parse_label_csv`.
    """
    name = str(path)
    p = Path(path)
    if not p.exists():
        raise InputError(f"{name}: no such file; check {flag}")
    if p.is_dir():
        raise InputError(f"{name}: is a directory; {flag} takes a CSV file")
    data = read_bytes(p, MAX_CSV_BYTES, what="the label CSV")
    return parse_label_csv(data, name, level_keys=level_keys, leniency=leniency)


def _decode(data: bytes, path: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"{path}:1:1: the file is UTF-16; save it as UTF-8 "
            "(in Excel: Save As → 'CSV UTF-8 (Comma delimited)')"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        line_start = data.rfind(b"\n", 0, e.start) + 1
        column = len(data[line_start : e.start].decode("utf-8", errors="replace")) + 1
        raise InputError(
            f"{path}:{line}:{column}: not valid UTF-8 (byte 0x{data[e.start]:02x}); the file "
            "is probably in a local code page (GBK, Latin-1): save it as UTF-8 "
            "(in Excel: Save As → 'CSV UTF-8 (Comma delimited)')"
        ) from e


def _records(text: str, path: str) -> list[tuple[int, list[str]]]:
    """(first physical line, cells) of each CSV record; a quoted cell may span lines."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: list[tuple[int, list[str]]] = []
    start = 1
    try:
        for cells in reader:
            records.append((start, cells))
            start = reader.line_num + 1
    except csv.Error as e:
        raise InputError(
            f"{path}:{reader.line_num or start}: malformed CSV ({e}); check the quotes on "
            "this line (a '\"' inside a cell must be doubled) and that the file is text"
        ) from e
    return records


def _header(cells: list[str], path: str, problems: list[str]) -> list[str] | None:
    """Check the header; the label keys, or None when the rows cannot be read at all."""
    first = cells[0] if cells else ""
    if first != NODE_NAME_HEADER:
        if len(cells) == 1 and any(sep in first for sep in (";", "\t", "|")):
            sep = next(s for s in (";", "\t", "|") if s in first)
            problems.append(
                f"{path}:1:1: the header is one cell containing {sep!r}; the file must be "
                "comma-separated (save it as CSV with ',' as the separator)"
            )
            return None
        hint = (
            f"rename it to exactly {NODE_NAME_HEADER!r} (case and spaces matter)"
            if first.strip().lower() == NODE_NAME_HEADER.lower()
            else f"the first column must be {NODE_NAME_HEADER!r} (the node names)"
        )
        problems.append(f"{path}:1:1: first header is {first!r}; {hint}")
    keys = cells[1:]
    if not keys:
        problems.append(
            f"{path}:1: the header has no label columns; add one column per label key "
            f"after {NODE_NAME_HEADER!r}, e.g. {NODE_NAME_HEADER},huawei.com/topotree.groupid"
        )
    seen: dict[str, int] = {}
    for col, key in enumerate(keys, start=2):
        where = f"{path}:1:{col}"
        if not key:
            problems.append(f"{where}: empty header; give the column a label key or delete it")
            continue
        if key == NODE_NAME_HEADER:
            problems.append(f"{where}: {NODE_NAME_HEADER!r} appears again; keep only column 1")
            continue
        if key in seen:
            problems.append(
                f"{where}: label key {key!r} repeats column {seen[key]}; keep one column per key"
            )
            continue
        seen[key] = col
        why = key_problems(key)
        if key != key.strip():
            why = ["has spaces around it", *why]
        if why:
            problems.append(f"{where}: invalid label key {key!r}: {'; '.join(why)}; fix the header")
    return keys


def _text(data: bytes | str, path: str) -> str:
    """The file's text without a BOM; an empty file is an error."""
    text = (data if isinstance(data, str) else _decode(data, path)).removeprefix(BOM)
    if not text.strip():
        raise TooFewRows(
            f"{path}:1: the file is empty; the first line must be the header "
            f"'{NODE_NAME_HEADER},<label key>,...' followed by one row per node"
        )
    return text


def _no_rows(path: str, header_line: int) -> str:
    return f"{path}:{header_line + 1}: the file has a header but no node rows; add one row per node"


def _absent_levels(path: str, keys: Sequence[str], level_keys: Sequence[str]) -> list[str]:
    """The problem of a profile level without a column, if any (check, generate --from-csv)."""
    absent = [k for k in level_keys if k not in keys]
    if not absent:
        return []
    return [
        f"{path}:1: no column for level label(s) {', '.join(absent)}; the profile's "
        f"levels are {', '.join(level_keys)}: add a column for each"
    ]


@dataclass
class _Rows:
    """The node rows of one sheet and every problem found in them."""

    path: str
    keys: Sequence[str]
    width: int  # cells in the header
    leniency: Leniency
    problems: list[str]
    rows: list[CsvRow] = field(default_factory=list)
    unnamed: list[int] = field(default_factory=list)
    repeats: list[tuple[int, int]] = field(default_factory=list)
    first_line: dict[str, int] = field(default_factory=dict)
    first_cells: dict[str, list[str]] = field(default_factory=dict)
    valid: set[str] = field(default_factory=set)  # checked (a column repeats few values)

    def read(self, records: Iterable[tuple[int, list[str]]]) -> None:
        """The records after the header, (first line, cells) each."""
        lenient, width = self.leniency, self.width
        # ``number`` counts records as MindCluster's tool does (header = 1), for its warnings.
        for number, (line, cells) in enumerate(records, start=2):
            if lenient.skip_unnamed_rows and cells and cells[0] == "":
                self.unnamed.append(number)
                continue
            if not "".join(cells).strip():
                continue  # blank line or an all-empty spreadsheet row
            if len(cells) < width and lenient.pad_short_rows:
                cells = cells + [""] * (width - len(cells))
            if len(cells) != width:
                self.problems.append(self._width_problem(line, cells))
            elif self._new_node(number, line, cells):
                self.rows.append(self._row(line, cells))

    def _width_problem(self, line: int, cells: list[str]) -> str:
        width = self.width
        return (
            f"{self.path}:{line}:{min(len(cells), width) + 1}: {len(cells)} cells but the "
            f"header has {width} columns; "
            + (
                "remove the extra cells (or quote a value containing ',')"
                if len(cells) > width
                else "add the missing cells (empty cells are allowed: 'node,,3')"
            )
        )

    def _new_node(self, number: int, line: int, cells: list[str]) -> bool:
        """Whether the row names a valid node not seen before; a repeat that the leniency
        merges is recorded, any other repeat is a problem."""
        node = cells[0]
        if not node.strip():
            self.problems.append(
                f"{self.path}:{line}:1: the row has values but no node name; fill in column 1"
            )
            return False
        bad = [] if NODE_NAME_RE.fullmatch(node) else dns1123_subdomain_problems(node)
        if bad:
            self.problems.append(
                f"{self.path}:{line}:1: {node!r} is not a valid node name: {'; '.join(bad)}; "
                "use the name shown by 'kubectl get nodes'"
            )
            return False
        first = self.first_line.get(node)
        if first is None:
            self.first_line[node] = line
            self.first_cells[node] = cells
            return True
        merge = self.leniency.merge_repeats
        if merge and self.first_cells[node] == cells:
            self.repeats.append((number, first))
        else:
            self.problems.append(
                f"{self.path}:{line}:1: node {node!r} already has a row on line {first}"
                + (" with other values" if merge else "")
                + "; keep one row per node"
            )
        return False

    def _row(self, line: int, cells: list[str]) -> CsvRow:
        """The node's values, each checked (once per distinct value); a bad one is left out."""
        valid, problems = self.valid, self.problems
        values: dict[str, str] = {}
        empty: list[str] = []
        for col, (key, value) in enumerate(zip(self.keys, cells[1:], strict=True), start=2):
            if value == "":
                empty.append(key)
                continue
            if value in valid:
                values[key] = value
                continue
            why = value_problems(value)
            if value != value.strip():
                why = ["has spaces around it", *why]
            if why:
                problems.append(
                    f"{self.path}:{line}:{col}: invalid value {value!r} for {key}: "
                    f"{'; '.join(why)}; fix the cell"
                )
                continue
            valid.add(value)
            values[key] = value
        return CsvRow(cells[0], line, values, tuple(empty))


def parse_label_csv(
    data: bytes | str,
    path: str = "<csv>",
    *,
    level_keys: Sequence[str] = (),
    leniency: Leniency = STRICT,
) -> LabelSheet:
    """Validate a whole label CSV. Returns the sheet or raises InputError with every problem.

    Rows whose cells are all empty (e.g. ``,,,`` left by a spreadsheet) are ignored. A row
    with a node name but no value is kept (``values`` empty): whether it matters depends on
    the command (apply skips it with a warning; ``delete --all-keys`` uses it).

    ``level_keys`` (a profile's levels, for ``check``/``generate --from-csv``) must each have
    a column; a missing one is reported with the other header problems. ``leniency`` relaxes
    the rules listed in :class:`Leniency`.
    """
    records = _records(_text(data, path), path)
    problems: list[str] = []
    header_line, header = records[0]
    if leniency.strip_headers:
        header = [cell.strip() for cell in header]
    first_bad = (header[0] if header else "") != NODE_NAME_HEADER
    keys = _header(header, path, problems)
    if keys is None:
        raise BadFirstHeader(problems)
    if len(records) < 2:
        raise TooFewRows([*problems, _no_rows(path, header_line)])
    problems += _absent_levels(path, keys, level_keys)
    sheet = _Rows(path, keys, len(header), leniency, problems)
    sheet.read(records[1:])
    # Only unnamed or blank rows: strict readers refuse; a lenient one has nothing to do.
    if not problems and not sheet.rows and not leniency.skip_unnamed_rows:
        problems.append(_no_rows(path, header_line))
    if problems:
        error = BadFirstHeader if first_bad else InputError
        raise error(problems, heading=f"{path}: {len(problems)} problem(s); nothing written:")
    return LabelSheet(
        path=path,
        keys=tuple(keys),
        rows=tuple(sheet.rows),
        unnamed=tuple(sheet.unnamed),
        repeats=tuple(sheet.repeats),
    )


def write_label_csv(
    out: TextIO,
    keys: Iterable[str],
    rows: Iterable[tuple[str, Mapping[str, str]]],
    *,
    line_end: str = "\n",
) -> int:
    """Write ``nodeName,<keys>`` and one row per node, no BOM, ``line_end`` after each row.

    Readable by ``apply`` and by MindCluster's label tool (which rejects a BOM). Returns the
    number of rows written.
    """
    columns = list(keys)
    writer = csv.writer(out, lineterminator=line_end)
    writer.writerow([NODE_NAME_HEADER, *columns])
    count = 0
    for node, values in rows:
        writer.writerow([node, *(values.get(k, "") for k in columns)])
        count += 1
    return count


def write_label_csv_file(
    path: str | Path,
    keys: Iterable[str],
    rows: Iterable[tuple[str, Mapping[str, str]]],
    *,
    line_end: str = "\n",
) -> int:
    """:func:`write_label_csv` to a file, atomically (whole or not at all)."""
    buf = io.StringIO()
    count = write_label_csv(buf, keys, rows, line_end=line_end)
    write_atomic(path, buf.getvalue())
    return count
