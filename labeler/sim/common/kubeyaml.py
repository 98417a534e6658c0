"""Fast reading of ``kubectl get nodes,pods -A -o yaml`` output, same result as PyYAML.

PyYAML builds a Python event and node object per scalar, so a 10,000-node snapshot
(~2 million scalars) takes 20 s even with libyaml, far over the advisor's 5 s budget.
kubectl prints a small, regular subset of YAML: block mappings and sequences, one scalar
per line, plain or quoted. This module parses that subset line by line and hands every
item of the List that uses anything else (block scalars, multi-line or flow values,
anchors, tags, floats, timestamps, comments after a value) to PyYAML, so the result is
always what ``yaml.safe_load`` gives; only the time differs. What PyYAML reads is
checked for alias bombs (:mod:`labeler.base.yamlsafe`); the line parser makes no aliases.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from labeler.base.yamlsafe import FAST_LOADER as _LOADER
from labeler.base.yamlsafe import checked

_RESOLVERS = yaml.SafeLoader.yaml_implicit_resolvers
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_INT_TAG = "tag:yaml.org,2002:int"
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")
_NOT_PLAIN = frozenset("&*!|>{}[]%@`#'\",?:")
_PLAIN_KEYS: dict[str, bool] = {}
_SCALARS: dict[str, Any] = {}  # repeated short values ("v1", "Running", "100m") parse once
_MISS = object()
# YAML's white space is the space and the tab only: Python's strip() would also take a
# no-break space (U+00A0), which is text to YAML. Python's splitlines() also breaks lines at
# characters libyaml does not (form feed, U+2028…): a file holding one goes to the loader
# whole, so that an item re-joined from its lines is never other text than was written.
_BLANK = " \t"
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # each found by a fast `in`
_CACHE_MAX = 100_000


class _Unsupported(Exception):
    """A construct outside kubectl's subset: let PyYAML read this part."""


def load(text: str, origin: str = "snapshot") -> Any:
    """The document(s) in ``text``: one object, or a list for a multi-document stream.

    InputError (naming ``origin``) when YAML aliases would expand it far beyond its size.
    """
    try:
        return _load_list(text, origin)
    except (_Unsupported, yaml.YAMLError):  # PyYAML again, for errors with the file's lines
        docs = [d for d in yaml.load_all(text, Loader=_LOADER) if d is not None]
        return checked(docs[0] if len(docs) == 1 else docs, text, origin)


def _load_list(text: str, origin: str) -> Any:
    """A top-level mapping whose ``items:`` sequence is read item by item."""
    if any(c in text for c in _OTHER_BREAKS):
        raise _Unsupported("a line break that YAML does not count as one")
    lines = text.splitlines()
    top: list[str] = []
    items: list[Any] = []
    has_items = False
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("items:") and line[6:].strip(_BLANK) in ("", "[]"):
            has_items = True
            i += 1
            start: int | None = None
            while i < n:
                entry = lines[i]
                if entry == "-" or entry.startswith("- "):
                    if start is not None:
                        items.append(_item(lines[start:i], origin))
                    start = i
                elif entry[:1] not in ("", " ", "#"):
                    break  # back at column 0: the List's next key
                i += 1
            if start is not None:
                items.append(_item(lines[start:i], origin))
            continue
        if line.startswith(("---", "...", "%")) and top:
            raise _Unsupported(line)
        top.append(line)
        i += 1
    head = "\n".join(top)
    doc = checked(yaml.load(head, Loader=_LOADER), head, origin) if top else None
    if not isinstance(doc, dict) or not has_items or "items" in doc:
        raise _Unsupported("not a single List")
    doc["items"] = items
    return doc


def _item(lines: list[str], origin: str) -> Any:
    try:
        return _Block(lines).item()
    except _Unsupported:
        text = "\n".join(lines) + "\n"
        return checked(yaml.load(text, Loader=_LOADER), text, origin)[0]


class _Block:
    """Recursive descent over (indent, text) lines of one List item."""

    def __init__(self, lines: list[str]) -> None:
        self.ind: list[int] = []
        self.txt: list[str] = []
        for raw in lines:
            body = raw.lstrip(" ")
            if not body or body[0] == "#":
                continue
            if body[0] == "\t":
                raise _Unsupported("tab indentation")
            self.ind.append(len(raw) - len(body))
            self.txt.append(body.rstrip(_BLANK))
        self.i = 0

    def item(self) -> Any:
        value = self.sequence(0)
        if self.i != len(self.txt) or len(value) != 1:
            raise _Unsupported("more than one item")
        return value[0]

    def node(self, indent: int) -> Any:
        """The block starting at the current line, whose indent is ``indent``."""
        text = self.txt[self.i]
        if text == "-" or text.startswith("- "):
            return self.sequence(indent)
        return self.mapping(indent)

    def sequence(self, indent: int) -> list[Any]:
        out: list[Any] = []
        ind, txt = self.ind, self.txt
        while self.i < len(txt) and ind[self.i] == indent:
            text = txt[self.i]
            if text == "-":
                self.i += 1
                out.append(self.child(indent, in_sequence=True))
                continue
            if not text.startswith("- "):
                break
            rest = text[2:].lstrip(" ")
            if rest[:1] in ("'", '"') or (": " not in rest and not rest.endswith(":")):
                out.append(scalar(rest))
                self.i += 1
                if self.i < len(txt) and ind[self.i] > indent:
                    raise _Unsupported("multi-line sequence entry")
                continue
            if rest.startswith("- "):
                raise _Unsupported("nested inline sequence")
            ind[self.i] = indent + len(text) - len(rest)
            txt[self.i] = rest
            out.append(self.mapping(ind[self.i]))
        return out

    def mapping(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        ind, txt = self.ind, self.txt
        i, n = self.i, len(txt)
        while i < n:
            if ind[i] != indent:
                if ind[i] > indent:
                    raise _Unsupported("unexpected indentation")
                break
            text = txt[i]
            if text[0] in _NOT_PLAIN or text.startswith("- "):
                break
            key, sep, value = text.partition(": ")
            if not sep:
                if not text.endswith(":"):
                    raise _Unsupported("not a key")
                key, value = text[:-1], ""
            if not (_PLAIN_KEYS.get(key) or _plain_key(key)):
                raise _Unsupported(f"key {key!r}")
            i += 1
            if value:
                value = value.lstrip(" ")
                cached = _SCALARS.get(value, _MISS)
                out[key] = scalar(value) if cached is _MISS else cached
            else:
                self.i = i
                out[key] = self.child(indent, in_sequence=False)
                i = self.i
        self.i = i
        return out

    def child(self, indent: int, *, in_sequence: bool) -> Any:
        """The value of a key (or ``-``) with nothing after it on its line."""
        if self.i == len(self.txt):
            return None
        nxt = self.ind[self.i]
        if nxt > indent:
            return self.node(nxt)
        if nxt == indent and not in_sequence and self.txt[self.i].startswith("- "):
            return self.sequence(indent)  # kubectl indents a list like its key
        return None


def scalar(text: str) -> Any:
    """One complete scalar, as PyYAML's SafeLoader would construct it (cached if short)."""
    value = _scalar(text)
    if len(text) <= 64 and len(_SCALARS) < _CACHE_MAX and not isinstance(value, dict | list):
        _SCALARS[text] = value
    return value


def _scalar(text: str) -> Any:
    first = text[0]
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if first == '"':
        try:
            value = json.loads(text)
        except ValueError as e:
            raise _Unsupported(text) from e
        if not isinstance(value, str):
            raise _Unsupported(text)
        return value
    if first == "'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in inner.replace("''", ""):
            raise _Unsupported(text)
        return inner.replace("''", "'")
    if (
        first in _NOT_PLAIN
        or " #" in text
        or "\t#" in text
        or ": " in text
        or text[-1] == ":"
        or text == "-"
        or text.startswith("- ")
    ):
        raise _Unsupported(text)
    for tag, regexp in _RESOLVERS.get(first, ()):
        if regexp.match(text):
            if tag == _BOOL_TAG:
                return text.lower() in ("yes", "true", "on")
            if tag == _NULL_TAG:
                return None
            if tag == _INT_TAG and _DECIMAL.fullmatch(text):
                return int(text.replace("_", ""))
            raise _Unsupported(text)
    return text


def _plain_key(key: str) -> bool:
    """A key PyYAML reads as this very string (not a bool, number or null), cached."""
    ok = _PLAIN_KEYS.get(key)
    if ok is None:
        try:
            ok = isinstance(scalar(key), str) and " #" not in key
        except _Unsupported:
            ok = False
        if len(_PLAIN_KEYS) < _CACHE_MAX:
            _PLAIN_KEYS[key] = ok
    return ok
