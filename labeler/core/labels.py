"""Kubernetes label rules, checked exactly as the API server checks them, and the value
encoders that turn long source IDs (OCIDs, 64-hex host IDs) into valid label values.

Rules (k8s.io/apimachinery/pkg/util/validation, IsQualifiedName / IsValidLabelValue):
- key = [prefix "/"] name; prefix a DNS-1123 subdomain of at most 253 characters;
  name 1–63 characters of ``[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?``.
- value: 0–63 characters of ``(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from labeler.base.errors import InputError, LabelerError

MAX_VALUE = 63
MAX_NAME = 63
MAX_PREFIX = 253
DEFAULT_HASH_LENGTH = 16

_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS1123_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")  # characters only, no length
# A valid node name (DNS-1123 subdomain, at most 253 characters), in one match; anything
# else gets dns1123_subdomain_problems' reasons.
NODE_NAME_RE = re.compile(
    r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)


class LabelError(LabelerError):
    """A label key or value the API server would reject (it answers 422)."""

    def __init__(self, message: str, *, key: str, value: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


class InvalidLabelKey(LabelError):
    pass


class InvalidLabelValue(LabelError):
    pass


class LabelValueTooLong(InvalidLabelValue):
    pass


def dns1123_subdomain_problems(text: str) -> list[str]:
    """Why ``text`` is not a DNS-1123 subdomain (node names and key prefixes); [] if it is."""
    problems = []
    if len(text) > MAX_PREFIX:
        problems.append(f"is {len(text)} characters; at most {MAX_PREFIX} are allowed")
    if not text:
        problems.append("is empty")
    elif any(not DNS1123_LABEL_RE.fullmatch(part) for part in text.split(".")):
        problems.append(
            "must be lowercase letters, digits, '-' and '.', each dot-separated part starting "
            "and ending with a letter or digit"
        )
    return problems


def key_problems(key: str) -> list[str]:
    """Every reason the API server would reject ``key`` as a label key; [] if valid."""
    problems: list[str] = []
    prefix, sep, name = key.rpartition("/")
    if sep:
        if not prefix:
            problems.append("prefix before '/' is empty")
        else:
            problems += [f"prefix {prefix!r} {p}" for p in dns1123_subdomain_problems(prefix)]
    if not name:
        problems.append("name part is empty")
    elif len(name) > MAX_NAME:
        problems.append(f"name part {name!r} is {len(name)} characters; at most 63 are allowed")
    elif not _NAME_RE.fullmatch(name):
        problems.append(
            f"name part {name!r} must consist of letters, digits, '-', '_' or '.', "
            "and start and end with a letter or digit"
        )
    return problems


def value_problems(value: str) -> list[str]:
    """Every reason the API server would reject ``value`` as a label value; [] if valid."""
    problems = []
    if len(value) > MAX_VALUE:
        problems.append(f"is {len(value)} characters; at most {MAX_VALUE} are allowed")
    if not _VALUE_RE.fullmatch(value):
        problems.append(
            "must be empty or consist of letters, digits, '-', '_' or '.', "
            "and start and end with a letter or digit"
        )
    return problems


def check_key(key: str) -> str:
    """Return ``key`` or raise InvalidLabelKey naming every rule it breaks."""
    problems = key_problems(key)
    if problems:
        raise InvalidLabelKey(f"invalid label key {key!r}: " + "; ".join(problems), key=key)
    return key


def check_value(key: str, value: str, *, hint: str = "use --encoding hash") -> str:
    """Return ``value`` or raise an error naming the key, the value, the rule and the fix."""
    if len(value) > MAX_VALUE and _VALUE_RE.fullmatch(value):
        raise LabelValueTooLong(
            f"value for {key} is {len(value)} characters (at most {MAX_VALUE}): {value!r}; {hint}",
            key=key,
            value=value,
        )
    problems = value_problems(value)
    if problems:
        raise InvalidLabelValue(
            f"invalid value {value!r} for {key}: " + "; ".join(problems) + f"; {hint}",
            key=key,
            value=value,
        )
    return value


# --- encoders -------------------------------------------------------------------------


@dataclass(frozen=True)
class Encoding:
    """How a source ID becomes a label value. Deterministic: equal IDs, equal values.

    - ``hash[:N]``: lowercase hex SHA-256 of the full ID, first N characters (default 16).
      Unique for practical purposes and always valid.
    - ``suffix:N``: the last N characters of the ID (``suffix:11`` matches Oracle's
      oci-hpc-oke labeler), with leading '-', '_' or '.' dropped so the value stays valid.
    - ``raw``: the ID itself, which must already be a valid label value.
    """

    kind: str
    length: int = DEFAULT_HASH_LENGTH

    @property
    def spec(self) -> str:
        return "raw" if self.kind == "raw" else f"{self.kind}:{self.length}"

    def encode(self, key: str, source_id: str) -> str:
        return _ENCODERS[self.kind](self, key, source_id)


_SLUG_BAD = re.compile(r"[^a-z0-9-]+")
_DASHES = re.compile(r"-{2,}")
NAME_HASH_LENGTH = 8  # hex digits that keep a shortened object name unique


def slug(text: str) -> str:
    """``text`` lowercased, every run of other characters than ``[a-z0-9-]`` one ``-``."""
    return _DASHES.sub("-", _SLUG_BAD.sub("-", text.lower())).strip("-")


def dns_name(text: str) -> str:
    """``text`` as a DNS label (≤ 63 characters): slugged, hashed when too long or empty.
    Names HyperNodes' owner values and Slurm topologies."""
    name = slug(text)
    if len(name) > MAX_NAME:
        keep = MAX_NAME - NAME_HASH_LENGTH - 1
        name = f"{name[:keep].rstrip('-')}-{digest(text, NAME_HASH_LENGTH)}"
    return name or digest(text, NAME_HASH_LENGTH)


def digest(text: str, length: int) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``text``: the one hash behind every
    hashed label value and generated name, so that the same input always maps the same way."""
    import hashlib  # here: OpenSSL's start-up is a few ms, and most commands never hash

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def _hash(enc: Encoding, key: str, source_id: str) -> str:
    return digest(source_id, enc.length)


def _suffix(enc: Encoding, key: str, source_id: str) -> str:
    value = source_id[-enc.length :].lstrip("-_.")
    return check_value(key, value, hint="use --encoding hash")


def _raw(enc: Encoding, key: str, source_id: str) -> str:
    return check_value(key, source_id, hint="use --encoding hash or suffix:N")


_ENCODERS: dict[str, Callable[[Encoding, str, str], str]] = {
    "hash": _hash,
    "suffix": _suffix,
    "raw": _raw,
}


def parse_encoding(spec: str) -> Encoding:
    """Parse ``hash``, ``hash:N`` (1 ≤ N ≤ 63... up to 64 hex digits), ``suffix:N``, ``raw``."""
    kind, _, arg = spec.strip().partition(":")
    if kind == "raw" and not arg:
        return Encoding("raw", 0)
    if kind in ("hash", "suffix"):
        if not arg and kind == "hash":
            return Encoding("hash", DEFAULT_HASH_LENGTH)
        if arg.isdigit() and 1 <= int(arg) <= MAX_VALUE:
            return Encoding(kind, int(arg))
    raise InputError(
        f"unknown encoding {spec!r}: use hash, hash:N, suffix:N (N from 1 to {MAX_VALUE}) or raw"
    )
