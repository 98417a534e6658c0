"""The fast emitter reads back as exactly the document it was given."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from labeler.emit.yamlio import dump, dump_all

_text = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "007",
            "1e3",
            "0x1f",
            "yes",
            "on",
            "null",
            "~",
            "a: b",
            "#x",
            "- x",
            "'q'",
            "12:30",
            "2024-01-01",
            "-",
            "x y",
            "é",
            "a\nb",
            "1.5",
            ".inf",
            "@x",
            "*a",
            "&a",
        ]
    ),
    st.text(max_size=8),
)
_leaf = st.one_of(_text, st.integers(-(10**6), 10**6), st.booleans(), st.none())
_doc = st.recursive(
    _leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=150)
@given(st.dictionaries(_text, _doc, min_size=1, max_size=5))
def test_round_trip(doc: dict[str, Any]) -> None:
    assert yaml.safe_load(dump(doc)) == doc


def test_stream_and_style() -> None:
    docs = [{"a": [{"b": "1", "c": [1, 2]}], "d": {}}, {"e": "x\ny\n"}]
    text = dump_all(docs)
    assert list(yaml.safe_load_all(text)) == docs
    assert "a:\n- b: '1'\n  c:\n  - 1\n  - 2\nd: {}\n" in text
    assert "e: |\n  x\n  y\n" in text
