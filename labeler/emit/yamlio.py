"""YAML output that kubectl and operators read back easily.

Multi-line strings (an embedded ``volcano-scheduler.conf``) are written as literal blocks
instead of one quoted line full of ``\\n``; keys keep their insertion order, because the
order of an object's fields is part of what makes a generated file readable and diffable.
libyaml's emitter is used when present: 100,000 HyperNode members are too slow otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class Dumper(_Base):  # type: ignore[misc]
    """SafeDumper (C when available) with literal blocks for multi-line strings."""

    def ignore_aliases(self, data: Any) -> bool:
        return True  # kubectl reads anchors, but people and other tools read these files


def _str(dumper: Any, data: str) -> Any:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


Dumper.add_representer(str, _str)


def dump(doc: Any) -> str:
    """One YAML document, keys in insertion order."""
    text: str = yaml.dump(
        doc,
        Dumper=Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=4096,
    )
    return text


def dump_all(docs: Iterable[Any]) -> str:
    """Several documents separated by ``---``."""
    return "".join(f"---\n{dump(d)}" for d in docs)
