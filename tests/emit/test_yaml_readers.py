"""Every string we emit is read back as that string by go-yaml v2 and by YAML 1.2 readers.

kubectl and Volcano read YAML with go-yaml v2 (YAML 1.1 rules, extended): a plain ``y`` is
a boolean there, ``08`` and ``12345678901234e5`` floats, ``0o17`` an integer. The resolver
table below is our own model of those rules — go-yaml v2's ``resolve`` (fixed words, then
for a value starting with a digit or sign: timestamp ``YYYY-…``, Go's base-prefixed integer
syntax after dropping ``_``, the float pattern), the YAML 1.1 type regexps (bool, int with
sexagesimal ``1:20``, float, null, timestamp) and the YAML 1.2 core schema — and a plain
scalar in our output must be ``str`` under all of them.
"""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from labeler.emit.yamlio import dump

STR = "str"


def _go_int(text: str) -> bool:
    """Go's strconv.ParseInt/ParseUint(text, 0, 64): the syntax, and a 64-bit range."""
    m = re.fullmatch(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)", text)
    if not m:
        return False
    digits = m.group(2)
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "01234567":
        value = int(digits[1:], 8)
    else:
        value = int(digits, 0) if digits[:2].lower() in ("0x", "0o", "0b") else int(digits)
    if m.group(1) == "-":
        return value <= 2**63
    return value < 2**64


def goyaml_v2(text: str) -> str:
    words = {
        **dict.fromkeys(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"], "bool"),
        **dict.fromkeys(["on", "On", "ON", "n", "N", "no", "No", "NO"], "bool"),
        **dict.fromkeys(["false", "False", "FALSE", "off", "Off", "OFF"], "bool"),
        **dict.fromkeys(["", "~", "null", "Null", "NULL"], "null"),
        **dict.fromkeys([".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF"], "float"),
        **dict.fromkeys(["+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"], "float"),
        "<<": "merge",
    }
    if text in words:
        return words[text]
    first = text[:1]
    if first == ".":
        return "float" if re.fullmatch(r"\.[0-9]+([eE][-+]?[0-9]+)?", text) else STR
    if first.isdigit() or first in "+-":
        if re.match(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}", text):
            return "timestamp"  # over-approximates Go's time.Parse layouts: stricter test
        plain = text.replace("_", "")
        if _go_int(plain):
            return "int"
        if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", plain):
            return "float"  # 08, 1e3, 12345678901234e5, and integers too big for 64 bits
    return STR


YAML11_RULES = [
    ("bool", r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE"),
    ("bool", r"on|On|ON|off|Off|OFF"),
    ("null", r"~|null|Null|NULL|"),
    ("int", r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"),
    ("int", r"[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+"),
    ("float", r"[-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)?"),
    (
        "float",
        r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)",
    ),
    ("timestamp", r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?"),
    ("merge", r"<<"),
    ("value", r"="),
]
YAML12_CORE_RULES = [
    ("null", r"null|Null|NULL|~|"),
    ("bool", r"true|True|TRUE|false|False|FALSE"),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"),
    ("float", r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"),
    ("float", r"[-+]?\.(inf|Inf|INF)|\.nan|\.NaN|\.NAN"),
]


def yaml11(text: str) -> str:
    return next((tag for tag, rx in YAML11_RULES if re.fullmatch(rx, text)), STR)


def yaml12_core(text: str) -> str:
    return next((tag for tag, rx in YAML12_CORE_RULES if re.fullmatch(rx, text)), STR)


READERS = {"go-yaml v2": goyaml_v2, "YAML 1.1": yaml11, "YAML 1.2 core": yaml12_core}

# (text, what go-yaml v2 makes of it plain): the forms the resolver table must cover
TABLE = [
    ("08", "float"),
    ("y", "bool"),
    ("N", "bool"),
    ("on", "bool"),
    ("Off", "bool"),
    ("0x1F", "int"),
    ("0o17", "int"),
    ("0b101", "int"),
    ("1_000", "int"),
    ("12345678901234e5", "float"),
    ("1e3", "float"),
    ("1.5", "float"),
    ("99999999999999999999", "float"),
    ("2024-01-02", "timestamp"),
    ("2024-1-2T10:00:00Z", "timestamp"),
    ("~", "null"),
    ("NULL", "null"),
    (".inf", "float"),
    ("1:20", STR),  # go-yaml v2 dropped sexagesimal; YAML 1.1 (PyYAML) still reads an int
    ("rack-1", STR),
]


def _emitted(text: str) -> str:
    line = dump({"k": text})
    assert line.startswith("k: ") and line.endswith("\n"), line
    return line[3:-1]


@pytest.mark.parametrize(("text", "go_tag"), TABLE)
def test_resolver_table_and_emitter(text: str, go_tag: str) -> None:
    assert goyaml_v2(text) == go_tag
    written = _emitted(text)
    if go_tag != STR or yaml11(text) != STR:
        assert written.startswith("'"), f"{text!r} must be quoted, got {written}"
    assert yaml.safe_load(dump({"k": text})) == {"k": text}


def test_the_issue_examples_are_quoted() -> None:
    for text in ["08", "y", "N", "on", "0x1F", "1_000", "1:20", "12345678901234e5"]:
        assert _emitted(text) == f"'{text}'"
    assert _emitted("rack-1") == "rack-1"  # plain when nobody can misread it


def test_fallback_dumper_quotes_the_same() -> None:
    text = dump({"conf": "a\nb\n", "v": "y", "w": "08"})  # multi-line: the PyYAML path
    assert "v: 'y'" in text and "w: '08'" in text


_alphabet = st.sampled_from(list("0123456789abeEfxXoOyYnN_.:-+TtZ ~"))
_texts = st.one_of(
    st.text(_alphabet, max_size=10),
    st.sampled_from([t for t, _ in TABLE]),
    st.from_regex(r"[0-9]{1,16}[eE][0-9]{1,2}", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[a-z]?", fullmatch=True),
)


@settings(max_examples=200)
@given(_texts)
def test_plain_only_when_every_reader_sees_a_string(text: str) -> None:
    written = _emitted(text)
    if not written.startswith(("'", '"')):
        assert written == text
        for name, reader in READERS.items():
            assert reader(text) == STR, f"{text!r} is {reader(text)} under {name}"
    assert yaml.safe_load(dump({"k": text})) == {"k": text}
