"""The fast snapshot reader gives exactly what PyYAML gives, on kubectl's subset and beyond."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from labeler.base.yamlsafe import FAST_LOADER
from labeler.sim.common import kubeyaml

KUBECTL = textwrap.dedent(
    """\
    apiVersion: v1
    items:
    - apiVersion: v1
      kind: Node
      metadata:
        annotations:
          node.alpha.kubernetes.io/ttl: "0"
          note: 'it''s: quoted'
        labels:
          kubernetes.io/hostname: gpu-1
          rack: "007"
          empty: ""
      spec:
        taints:
        - effect: NoSchedule
          key: nvidia.com/gpu
        unschedulable: true
      status:
        allocatable:
          cpu: "224"
          nvidia.com/gpu: "8"
        conditions:
        - status: "True"
          type: Ready
        images: []
    - apiVersion: v1
      kind: Pod
      metadata:
        name: p
        ownerReferences:
        -   kind: DaemonSet
            name: ds
      spec:
        containers:
        - args:
          - --flag
          - "-"
          resources: {}
        nodeName: gpu-1
        priority: 0
        terminationGracePeriodSeconds: 30
      status:
        phase: Running
    kind: List
    metadata:
      resourceVersion: ""
    """
)

# Each is one List item PyYAML reads differently from a naive line reader; the fast path
# must hand them to PyYAML (or read them identically).
TRICKY_ITEMS = [
    "- a: |\n    line one\n    line two\n",
    "- a: >-\n    folded\n    text\n",
    "- a: plain that\n    continues\n",
    '- a: "double that\n    continues"\n',
    "- a: &x 1\n  b: *x\n",
    "- a: !!str 1\n",
    "- a: {b: 1, c: [2, 3]}\n",
    "- a: 1.5\n  b: 2024-01-02T03:04:05Z\n  c: 0x1F\n  d: 017\n  e: .inf\n",
    "- a: yes\n  b: Off\n  c: ~\n  d: null\n  e: -3\n",
    "- a: 1 # comment\n  b: 'q' # comment\n",
    '- "quoted key": 1\n  ? complex\n  : 2\n',
    "- 1: int key\n  true: bool key\n",
    "- a:\n  - - nested\n",
    "- - x\n  - y\n",
    '- a: "tab\\there \\u00e9 \\x41"\n',
    "- a: 'unterminated\n",
]


def _list(*items: str) -> str:
    return "apiVersion: v1\nitems:\n" + "".join(items) + "kind: List\n"


def test_kubectl_output_reads_like_pyyaml() -> None:
    assert kubeyaml.load(KUBECTL) == yaml.safe_load(KUBECTL)


def test_kubectl_items_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pyyaml(*args: object, **kwargs: object) -> None:
        raise AssertionError("fell back to PyYAML")

    monkeypatch.setattr(kubeyaml.yaml, "load_all", no_pyyaml)
    expected = yaml.safe_load(KUBECTL)
    monkeypatch.setattr(kubeyaml, "_item", lambda lines, origin: kubeyaml._Block(lines).item())
    assert kubeyaml.load(KUBECTL) == expected


def test_errors_name_the_line_in_the_file() -> None:
    text = _list("- kind: Node\n", "- kind: Pod\n  a: 'unterminated\n  b: [\n")
    with pytest.raises(yaml.YAMLError, match=r"line [56]"):
        kubeyaml.load(text)


def test_tricky_items_read_like_pyyaml() -> None:
    for item in TRICKY_ITEMS:
        text = _list("- kind: Node\n", item)
        try:
            expected = yaml.safe_load(text)
        except yaml.YAMLError:
            try:
                kubeyaml.load(text)
            except yaml.YAMLError:
                continue
            raise AssertionError(f"accepted invalid YAML: {item!r}") from None
        assert kubeyaml.load(text) == expected, item


def test_other_documents_go_to_pyyaml() -> None:
    for text in (
        "kind: Node\nmetadata: {name: a}\n",
        "---\nkind: Node\n---\nkind: Pod\n",
        "items: []\nkind: List\n",
        "[]\n",
        "",
    ):
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
        assert kubeyaml.load(text) == (docs[0] if len(docs) == 1 else docs), text


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_scalar = st.one_of(
    _text,
    st.sampled_from(["", "true", "no", "~", "1", "-2", "0x10", "1.5", "a: b", "#x", "- y"]),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.none(),
)
_key = st.one_of(st.from_regex(r"[a-z][a-zA-Z0-9./-]{0,20}", fullmatch=True), _text)
_value: Any = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_key, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(_key, _value, min_size=1, max_size=4), max_size=3))
# YAML's blanks are the space and the tab: a no-break space is a value, not white space
@example([{"a": ""}, {"a": None}, {"a": "\xa0"}])
@example([{"k": "x\x1cy"}, {"k": "\u2028"}])
def test_anything_pyyaml_dumps_reads_back_the_same(items: list[dict[str, Any]]) -> None:
    text = yaml.safe_dump(
        {"apiVersion": "v1", "items": items, "kind": "List"},
        default_flow_style=False,
        allow_unicode=True,
        width=40,
    )
    # the same as the loader every other snapshot is read with (libyaml where PyYAML has it)
    assert kubeyaml.load(text) == yaml.load(text, Loader=FAST_LOADER)
