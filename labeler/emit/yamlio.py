"""YAML output that kubectl and operators read back easily — and fast.

Keys keep their insertion order (the field order is part of what makes a generated file
readable and diffable). Documents made only of maps, lists, one-line strings, numbers and
booleans — every generated object — go through a small block-style emitter: PyYAML's
representer costs ~9 s for the 100,000 HyperNode members of a large cluster. A scalar is
written plain only when every reader takes it for the same string, otherwise single-quoted.
PyYAML's resolver is not enough: kubectl and Volcano read YAML with go-yaml v2, which also
takes ``y``/``N`` for booleans, ``08`` and ``12345678901234e5`` for floats and
``0o17``/``0b101`` for integers (a HyperNode ``labelMatch`` value read as a number is
rejected as "must be of type string"). So anything that starts like a number or a date, or
is a YAML 1.1 boolean/null word in any case, is quoted too. Within the plain characters
allowed (a letter or digit, then letters, digits and ``._/=-``) those two checks cover every
implicit type of YAML 1.1 (PyYAML), go-yaml v2 and YAML 1.2, so the fast path needs no
PyYAML at all (tests/emit/test_yaml_readers.py holds the readers' tables). Anything else
(multi-line strings: an embedded ``volcano-scheduler.conf``) goes through PyYAML, loaded
only then, with literal blocks for multi-line strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

_PLAIN_CHARS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/=-]*$")
_STR_TAG = "tag:yaml.org,2002:str"
# Words some YAML reader resolves to a boolean or null (YAML 1.1, go-yaml v2, YAML 1.2);
# compared lower-cased, so odd spellings such as ``yEs`` are quoted too (harmless).
_SPECIAL_WORDS = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})
# Number-like (decimal, float with exponent, dotted, with '_' digit separators) or date-like
# starts; only checked for values that already match _PLAIN_CHARS, so signs and ':' never
# reach here.
_NUMBER_LIKE = re.compile(
    r"[0-9][0-9._]*(?:[eE][-+]?[0-9_]+)?|0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+"
    r"|[0-9]{4}-.*"
)


@lru_cache(maxsize=1)
def _dumper() -> Any:
    """SafeDumper (C when available) with literal blocks for multi-line strings."""
    import yaml

    base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[misc]
        def ignore_aliases(self, data: Any) -> bool:
            return True  # kubectl reads anchors, but people and other tools read these files

    Dumper.add_representer(str, _str)
    return Dumper


def _str(dumper: Any, data: str) -> Any:
    if "\n" in data:
        return dumper.represent_scalar(_STR_TAG, data, style="|")
    if data.isprintable() and not _plain_ok(data):
        # PyYAML would write ``y`` or ``08`` plain; go-yaml v2 would not read a string back
        return dumper.represent_scalar(_STR_TAG, data, style="'")
    return dumper.represent_scalar(_STR_TAG, data)


class _Unsupported(Exception):
    pass


def _plain_ok(value: str) -> bool:
    """Does every YAML reader (PyYAML, go-yaml v2, YAML 1.2) read ``value`` plain as itself?"""
    return bool(
        _PLAIN_CHARS.fullmatch(value)
        and value.lower() not in _SPECIAL_WORDS
        and not _NUMBER_LIKE.fullmatch(value)
    )


@lru_cache(maxsize=65536)
def _scalar(value: str) -> str:
    if _plain_ok(value):
        return value
    if not value.isprintable():
        raise _Unsupported
    return "'" + value.replace("'", "''") + "'"


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise _Unsupported
    return _scalar(key)


def _atom(value: Any) -> str | None:
    """The inline form of a scalar, or None for a map/list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _scalar(value)
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{}" if not value else None
    if isinstance(value, list):
        return "[]" if not value else None
    raise _Unsupported


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Block-style body of a non-empty map or list, each line prefixed by ``indent``."""
    if isinstance(value, dict):
        for k, v in value.items():
            atom = _atom(v)
            if atom is not None:
                out.append(f"{indent}{_key(k)}: {atom}\n")
            else:
                out.append(f"{indent}{_key(k)}:\n")
                # PyYAML's style: lists under a key are not indented further
                _emit(v, indent if isinstance(v, list) else indent + "  ", out)
    else:
        for item in value:
            atom = _atom(item)
            if atom is not None:
                out.append(f"{indent}- {atom}\n")
                continue
            inner: list[str] = []
            _emit(item, indent + "  ", inner)
            first = inner[0]
            inner[0] = f"{indent}- {first[len(indent) + 2 :]}"
            out.extend(inner)


def dump(doc: Any) -> str:
    """One YAML document, keys in insertion order."""
    if isinstance(doc, (dict, list)) and doc:
        try:
            out: list[str] = []
            _emit(doc, "", out)
            return "".join(out)
        except _Unsupported:
            pass
    import yaml

    text: str = yaml.dump(
        doc,
        Dumper=_dumper(),
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=4096,
    )
    return text


def dump_all(docs: Iterable[Any]) -> str:
    """Several documents separated by ``---``."""
    return "".join(f"---\n{dump(d)}" for d in docs)
