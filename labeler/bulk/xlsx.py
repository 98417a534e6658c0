"""A small read-only reader of .xlsx worksheets: the cells that exist, nothing else.

An .xlsx is a zip of XML parts: ``xl/workbook.xml`` names the sheets, its relationships
(``xl/_rels/workbook.xml.rels``) say which part holds each, ``xl/sharedStrings.xml`` holds
the text that cells refer to by index, and a sheet part lists ``<row>``s of ``<c>`` cells
followed by its ``<mergeCells>``. The LLD reader needs values, formulas and merges of one
sheet; a general library (openpyxl) costs more to import than the whole command and pads
rows out to the size the sheet declares, which a stray format at XFD1048576 makes absurd.
Here a sheet is streamed with ``iterparse`` and only cells holding a value or formula are
kept, whatever the declared used range.

Not read: styles (a number formatted as a date stays a number), comments, drawings.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from xml.etree.ElementTree import Element, ParseError, iterparse

from labeler.base.errors import InputError

_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_DOC_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_ESCAPED = re.compile(r"_x([0-9A-Fa-f]{4})_")
Cell = tuple[int, int]  # (row, column), both 1-based


class XlsxError(InputError):
    """The file is not a readable .xlsx; ``sheet`` names the sheet when one is to blame."""

    def __init__(self, problem: str, *, sheet: str | None = None) -> None:
        super().__init__(problem)
        self.sheet = sheet


@dataclass(frozen=True)
class SheetData:
    """One worksheet: ``values`` of the cells holding one (a formula's cached value),
    ``formulas`` (``=…``) of cells holding a formula, ``merges`` as
    (first row, first column, last row, last column)."""

    title: str
    values: dict[Cell, Any] = field(default_factory=dict)
    formulas: dict[Cell, str] = field(default_factory=dict)
    merges: list[tuple[int, int, int, int]] = field(default_factory=list)


def column_letter(col: int) -> str:
    """1 → A, 27 → AA, 16384 → XFD."""
    letters = ""
    while col > 0:
        col, rest = divmod(col - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def split_ref(ref: str) -> Cell:
    """'B3' → (3, 2); ValueError if it is not a cell reference."""
    col = 0
    i = 0
    for ch in ref:
        o = ord(ch) & ~32  # upper case
        if not 65 <= o <= 90:
            break
        col = col * 26 + o - 64
        i += 1
    row = int(ref[i:])
    if not col or row < 1:
        raise ValueError(f"not a cell reference: {ref!r}")
    return row, col


def _local(tag: str) -> str:
    return tag[tag.rfind("}") + 1 :]


def _ns(tag: str) -> str:
    return tag[: tag.rfind("}") + 1]


def _unescape(text: str) -> str:
    """Excel writes control characters (and a literal ``_xHHHH_``) as ``_xHHHH_``."""
    if "_x" not in text:
        return text
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def _text(elem: Element, ns: str) -> str:
    """A string item (``<si>`` or ``<is>``): its ``<t>``, or its rich-text runs' ``<t>``s.

    Phonetic runs (``<rPh>``, furigana) are not part of the text.
    """
    plain = elem.find(ns + "t")
    parts = [plain.text or ""] if plain is not None else []
    parts += [t.text or "" for t in elem.iterfind(f"{ns}r/{ns}t")]
    return _unescape("".join(parts))


def _number(text: str) -> int | float:
    """As openpyxl does: an int unless it has a decimal point or an exponent."""
    if "." in text or "e" in text or "E" in text:
        return float(text)
    return int(text)


class Workbook:
    """An open .xlsx file: ``sheetnames`` in workbook order; ``sheet(title)`` reads one."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._parts: dict[str, str] = {}  # sheet title → part name in the zip
        self._strings_part: str | None = None
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, EOFError) as e:
            raise self._not_xlsx(e) from e
        except OSError as e:
            raise XlsxError(f"{self.path}: cannot read the workbook: {e.strerror or e}") from e
        try:
            self._read_workbook()
        except BaseException:
            self._zip.close()
            raise

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> Workbook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def sheetnames(self) -> list[str]:
        return list(self._parts)

    def _not_xlsx(self, e: BaseException) -> XlsxError:
        return XlsxError(
            f"{self.path}: not an .xlsx workbook ({e}); save the LLD as 'Excel Workbook (*.xlsx)'"
        )

    def _broken(self, what: str, e: BaseException, sheet: str | None = None) -> XlsxError:
        return XlsxError(
            f"{self.path}: {what} is not readable ({e}); open it in Excel or LibreOffice "
            "and save it again as .xlsx",
            sheet=sheet,
        )

    def _open_part(self, name: str) -> IO[bytes]:
        try:
            return self._zip.open(name)
        except KeyError as e:
            raise self._not_xlsx(e) from e

    def _events(self, part: str, what: str, sheet: str | None = None) -> Iterator[Any]:
        """iterparse's (event, element) pairs of a part, its failures as XlsxError."""
        with self._open_part(part) as f:
            try:
                yield from iterparse(f, events=("start", "end"))
            except ParseError as e:
                raise self._broken(what, e, sheet) from e
            except (zipfile.BadZipFile, zlib.error, EOFError) as e:
                raise self._not_xlsx(e) from e

    def _relationships(self, part: str) -> dict[str, tuple[str, str]]:
        """Id → (type, part name) of a part's relationships (``_rels/<part>.rels``)."""
        folder, name = posixpath.split(part)
        rels = posixpath.join(folder, "_rels", name + ".rels")
        found: dict[str, tuple[str, str]] = {}
        if rels not in self._zip.NameToInfo:
            return found
        for ev, elem in self._events(rels, rels):
            if ev == "end" and elem.tag == _REL:
                target = elem.get("Target", "")
                if elem.get("TargetMode") == "External":
                    continue
                if target.startswith("/"):
                    target = target[1:]
                else:
                    target = posixpath.normpath(posixpath.join(folder, target))
                found[elem.get("Id", "")] = (elem.get("Type", ""), target)
        return found

    def _read_workbook(self) -> None:
        main = next(
            (t for kind, t in self._relationships("").values() if kind.endswith("/officeDocument")),
            "xl/workbook.xml",
        )
        rels = self._relationships(main)
        for kind, target in rels.values():
            if kind.endswith("/sharedStrings"):
                self._strings_part = target
        for ev, elem in self._events(main, main):
            if ev == "end" and _local(elem.tag) == "sheet":
                title = elem.get("name", "")
                rel = rels.get(elem.get(_DOC_REL, ""))
                if rel is None:
                    raise self._broken(main, ValueError(f"sheet {title!r} has no part"))
                self._parts[title] = rel[1]

    def _shared_strings(self) -> list[str]:
        part = self._strings_part
        if part is None or part not in self._zip.NameToInfo:
            return []
        strings: list[str] = []
        ns = ""
        for ev, elem in self._events(part, part):
            if ev == "start":
                if not ns:
                    ns = _ns(elem.tag)
            elif elem.tag == ns + "si":
                strings.append(_text(elem, ns))
                elem.clear()
        return strings

    def sheet(self, title: str) -> SheetData:
        """The values, formulas and merges of one sheet; KeyError if there is no such sheet."""
        part = self._parts[title]
        what = f"sheet {title!r}"
        data = SheetData(title)
        strings: list[str] | None = None
        ns = tag_row = tag_c = tag_v = tag_f = tag_is = tag_merge = ""
        sheet_data: Element | None = None
        row_no = 0
        shared: dict[str, tuple[str, str]] = {}  # shared formula index → (text, anchor)
        try:
            for ev, elem in self._events(part, what, title):
                if ev == "start":
                    if not ns:
                        ns = _ns(elem.tag)
                        tag_row, tag_c = ns + "row", ns + "c"
                        tag_v, tag_f, tag_is = ns + "v", ns + "f", ns + "is"
                        tag_merge = ns + "mergeCell"
                    elif sheet_data is None and elem.tag == ns + "sheetData":
                        sheet_data = elem
                    continue
                if elem.tag == tag_row:
                    r = elem.get("r")
                    row_no = int(r) if r else row_no + 1
                    col = 0
                    for c in elem.iter(tag_c):
                        ref = c.get("r")
                        if ref:
                            row, col = split_ref(ref)
                        else:
                            row, col = row_no, col + 1
                        kind = c.get("t", "n")
                        value: Any = None
                        if kind == "inlineStr":
                            item = c.find(tag_is)
                            value = _text(item, ns) if item is not None else None
                        else:
                            text = c.findtext(tag_v)
                            if text:
                                if kind == "n":
                                    value = _number(text)
                                elif kind == "s":
                                    if strings is None:
                                        strings = self._shared_strings()
                                    value = strings[int(text)]
                                elif kind == "b":
                                    value = bool(int(text))
                                else:  # str (a formula's text), e (an error), d (ISO date)
                                    value = _unescape(text)
                        if value is not None:
                            data.values[(row, col)] = value
                        f = c.find(tag_f)
                        if f is not None:
                            formula = "=" + (f.text or "")
                            if f.get("t") == "shared":
                                si = f.get("si", "")
                                if f.text:
                                    shared[si] = (formula, ref or column_letter(col) + str(row))
                                elif si in shared:
                                    # The same formula moved to this cell; naming the anchor
                                    # tells the user where it is written.
                                    text_, anchor = shared[si]
                                    formula = f"{text_} (shared from {anchor})"
                            data.formulas[(row, col)] = formula
                    # Keep memory flat however many rows: drop each one once read.
                    if sheet_data is not None:
                        del sheet_data[:]
                elif elem.tag == tag_merge:
                    first, _, last = elem.get("ref", "").partition(":")
                    r1, c1 = split_ref(first)
                    r2, c2 = split_ref(last) if last else (r1, c1)
                    data.merges.append((r1, c1, r2, c2))
        except (ValueError, IndexError) as e:
            raise self._broken(what, e, title) from e
        return data
