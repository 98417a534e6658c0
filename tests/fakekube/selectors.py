"""Label and field selectors as the API server parses them.

Label selectors follow k8s.io/apimachinery/pkg/labels/selector.go (lexer + parser): equality
(`=`, `==`, `!=`), set-based (`in`, `notin`), existence (`key`, `!key`), numeric `>`/`<`,
comma = AND, whitespace between tokens ignored.  Field selectors follow
k8s.io/apimachinery/pkg/fields/selector.go (`=`, `==`, `!=`, backslash escapes).
Docs: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/ and
https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .validation import is_qualified_name, is_valid_label_value


class SelectorError(ValueError):
    """Raised for an unparsable selector; the server maps it to 400 BadRequest."""


_SPECIAL = "=!(),<>"
_KEYWORDS = {"in": "IN", "notin": "NOTIN"}
_SYMBOLS = ["!=", "==", "=", "!", "(", ")", ",", ">", "<"]


def _lex(text: str) -> list[tuple[str, str]]:
    toks: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in _SPECIAL:
            for sym in _SYMBOLS:
                if text.startswith(sym, i):
                    toks.append((sym, sym))
                    i += len(sym)
                    break
            else:  # pragma: no cover - every special char starts some symbol
                raise SelectorError(f"error: unexpected character {c!r}")
            continue
        j = i
        while j < len(text) and not text[j].isspace() and text[j] not in _SPECIAL:
            j += 1
        word = text[i:j]
        toks.append((_KEYWORDS.get(word, "ID"), word))
        i = j
    toks.append(("EOS", ""))
    return toks


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # one of: exists, !, =, !=, in, notin, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        v = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and v in self.values
        if self.op in ("!=", "notin"):
            # Absent keys satisfy != and notin (Requirement.Matches in selector.go).
            return not has or v not in self.values
        if not has:
            return False
        try:
            num = int(v or "")
        except ValueError:
            return False
        bound = int(self.values[0])
        return num > bound if self.op == "gt" else num < bound


class LabelSelector:
    def __init__(self, reqs: list[Requirement]) -> None:
        self.reqs = reqs

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.reqs)

    @property
    def empty(self) -> bool:
        return not self.reqs


def _check_key(key: str) -> None:
    errs = is_qualified_name(key)
    if errs:
        raise SelectorError(f'unable to parse requirement: invalid label key "{key}": {errs[0]}')


def _check_value(key: str, val: str) -> None:
    errs = is_valid_label_value(val)
    if errs:
        raise SelectorError(
            f'unable to parse requirement: invalid label value: "{val}": at key: "{key}": {errs[0]}'
        )


def _as_value(tok: tuple[str, str]) -> str | None:
    # Inside a value list the keywords `in`/`notin` are plain identifiers (lexer "Values" mode).
    return tok[1] if tok[0] in ("ID", "IN", "NOTIN") else None


def _parse_value_list(
    take: Callable[[], tuple[str, str]], peek: Callable[[], tuple[str, str]], key: str
) -> list[str]:
    """parseIdentifiersList: `(a,b)`, `()`, and the `(,` / `,)` forms meaning the empty value."""
    values: list[str] = []
    if peek()[0] == ")":
        take()
        return values
    while True:
        tok = take()
        val = _as_value(tok)
        if val is not None:
            _check_value(key, val)
            values.append(val)
            nxt = take()
            if nxt[0] == ")":
                return values
            if nxt[0] != ",":
                raise SelectorError(f"found '{nxt[1]}', expected: ',' or ')'")
            if peek()[0] == ")":
                take()
                values.append("")
                return values
        elif tok[0] == ",":
            if not values:
                values.append("")
            if peek()[0] == ")":
                take()
                values.append("")
                return values
        else:
            raise SelectorError(f"found '{tok[1]}', expected: ',', or identifier")


def parse_label_selector(text: str | None) -> LabelSelector:
    if not text or not text.strip():
        return LabelSelector([])
    toks = _lex(text)
    pos = 0
    reqs: list[Requirement] = []

    def take() -> tuple[str, str]:
        nonlocal pos
        t = toks[pos]
        pos += 1
        return t

    def peek() -> tuple[str, str]:
        return toks[pos]

    while True:
        kind, lit = take()
        if kind == "!":
            kkind, key = take()
            if kkind != "ID":
                raise SelectorError(f"found '{key}', expected: identifier after '!'")
            _check_key(key)
            reqs.append(Requirement(key, "!"))
        elif kind == "ID":
            key = lit
            _check_key(key)
            nk = peek()[0]
            if nk in ("EOS", ","):
                reqs.append(Requirement(key, "exists"))
            else:
                op_kind, op_lit = take()
                if op_kind in ("=", "==", "!="):
                    vk, vl = peek()
                    if vk in ("EOS", ","):
                        value = ""  # "a=" selects the empty value
                    elif vk == "ID":
                        take()
                        value = vl
                    else:
                        raise SelectorError(f"found '{vl}', expected: identifier")
                    _check_value(key, value)
                    reqs.append(Requirement(key, "!=" if op_kind == "!=" else "=", (value,)))
                elif op_kind in ("IN", "NOTIN"):
                    pk, pl = take()
                    if pk != "(":
                        raise SelectorError(f"found '{pl}', expected: '('")
                    # `in ()` is accepted and matches nothing; `notin ()` matches all (as
                    # a 1.37 API server answers).
                    values = _parse_value_list(take, peek, key)
                    reqs.append(Requirement(key, op_kind.lower(), tuple(values)))
                elif op_kind in (">", "<"):
                    vk, vl = take()
                    try:
                        int(vl)
                    except ValueError:
                        raise SelectorError(
                            f"for 'Gt', 'Lt' operators, the value must be an integer: {vl!r}"
                        ) from None
                    reqs.append(Requirement(key, "gt" if op_kind == ">" else "lt", (vl,)))
                else:
                    raise SelectorError(f"found '{op_lit}', expected: in, notin, =, ==, !=, gt, lt")
        else:
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
        kind, lit = take()
        if kind == "EOS":
            return LabelSelector(reqs)
        if kind != ",":
            raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")


# ---------------------------------------------------------------- field selectors


@dataclass(frozen=True)
class FieldTerm:
    field: str
    op: str  # "=" or "!="
    value: str


class FieldSelector:
    def __init__(self, terms: list[FieldTerm]) -> None:
        self.terms = terms

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        for t in self.terms:
            v = fields.get(t.field, "")
            if (v == t.value) != (t.op == "="):
                return False
        return True

    def required_name(self) -> str | None:
        """metadata.name=X lets a list skip the full scan (like the watch cache index)."""
        for t in self.terms:
            if t.field == "metadata.name" and t.op == "=":
                return t.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if c == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            if value[i + 1] not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence in {value!r}")
            out.append(value[i + 1])
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def parse_field_selector(
    text: str | None,
    supported: Callable[[str], bool] | None = None,
    unsupported: Callable[[str], str] | None = None,
) -> FieldSelector:
    """``unsupported`` words the refusal of a field the kind does not support."""
    if not text:
        return FieldSelector([])
    terms = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for op in ("!=", "==", "="):
            idx = part.find(op)
            if idx >= 0:
                field, value = part[:idx].strip(), part[idx + len(op) :]
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        if supported is not None and not supported(field):
            # Message of the field label conversion funcs in the API server.
            raise SelectorError(
                unsupported(field) if unsupported else f"field label not supported: {field}"
            )
        terms.append(FieldTerm(field, "!=" if op == "!=" else "=", _unescape(value)))
    return FieldSelector(terms)
