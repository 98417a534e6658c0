"""YAML from users' files, with a bound on what aliases expand to.

PyYAML builds an alias as a second reference to the anchored object, so loading the
"billion laughs" (nine anchors, each listing the previous one nine times) is instant and
small. The bomb goes off later, in whatever walks the result as a tree: a validator, a
``deepcopy``, a JSON or YAML dump. So every document read from a file is measured once as
that tree (each object counted once, with its expanded size remembered) and refused when
aliases make it far larger than what was written. Without an anchor (``&``) in the text
there can be no alias, and nothing is measured.

Small files (profiles, ConfigMaps, kubeconfigs) are read with PyYAML's own SafeLoader,
whose messages are clearer than libyaml's; a document nested deeper than Python's
recursion limit is then an InputError too. Big ones (snapshots) use :data:`FAST_LOADER`.
"""

from __future__ import annotations

from typing import Any

import yaml

from labeler.base.errors import InputError, yaml_problem

# libyaml when PyYAML has it: the same results as yaml.safe_load, faster, and with its own
# nesting limit (100,000 "[" is a YAML error there).
FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Values an aliased document may expand to, beyond this many per value written.
EXPANSION_FLOOR = 100_000
EXPANSION_FACTOR = 10


def load(text: str, origin: str, *, hint: str = "not valid YAML") -> Any:
    """One document (None when empty); InputError with the file's line on a YAML error or
    an alias bomb. ``hint`` ends the message of a YAML error (what the file should be)."""
    try:
        return parse(text, origin)
    except yaml.YAMLError as e:
        raise InputError(f"{yaml_problem(origin, e)}; {hint}") from e


def parse(text: str, origin: str) -> Any:
    """Like :func:`load`, but a YAML error is raised as it is (the caller words it)."""
    try:
        doc = yaml.safe_load(text)
    except RecursionError as e:
        raise InputError(f"{origin}: nested too deeply to be read; {_DEEP}") from e
    return checked(doc, text, origin)


_DEEP = "no real file of this kind nests more than a few levels"


def checked(doc: Any, text: str, origin: str) -> Any:
    """``doc`` (loaded from ``text``) unless its aliases expand it far beyond its size."""
    if "&" in text:
        limit = max(EXPANSION_FLOOR, EXPANSION_FACTOR * _written_size(doc))
        if _expanded_size(doc, limit) is None:
            raise InputError(
                f"{origin}: YAML aliases (*name) expand the file to more than {limit:,} "
                "values, or refer to themselves; write the values out instead"
            )
    return doc


def _children(obj: list[Any] | dict[Any, Any]) -> Any:
    return obj.values() if isinstance(obj, dict) else obj


def _written_size(doc: Any) -> int:
    """Values in ``doc`` counting each shared object once: about what the file spells."""
    seen: set[int] = set()
    total = 1
    stack = [doc]
    while stack:
        obj = stack.pop()
        if isinstance(obj, list | dict) and id(obj) not in seen:
            seen.add(id(obj))
            total += len(obj)
            stack.extend(_children(obj))
    return total


def _expanded_size(doc: Any, limit: int) -> int | None:
    """Values in ``doc`` as a tree, every alias expanded; None once over ``limit`` or when
    an object contains itself. Iterative (no recursion limit to hit), and each shared
    object's size is computed once and remembered."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        obj, done = stack.pop()
        if not isinstance(obj, list | dict):
            continue
        key = id(obj)
        if done:
            size = 1 + sum(sizes.get(id(c), 1) for c in _children(obj))
            if size > limit:
                return None
            sizes[key] = size
            open_.discard(key)
        elif key in open_:
            return None  # an alias to an enclosing node: endless when walked
        elif key not in sizes:
            open_.add(key)
            stack.append((obj, True))
            stack.extend((c, False) for c in _children(obj) if isinstance(c, list | dict))
    return sizes.get(id(doc), 1)
