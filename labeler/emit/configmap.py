"""Set ``resource-level-config`` inside an existing Volcano scheduler ConfigMap file.

The file may be the ConfigMap alone (``kubectl get cm volcano-scheduler-configmap -o yaml``)
or a multi-document installer (``volcano-vX.yaml``, as the MindCluster docs describe). Only
the document holding ``data.volcano-scheduler.conf`` is rewritten; every other document is
kept byte for byte. Inside the embedded config only ``init-params`` →
``resource-level-config`` changes, and only this topology's tree inside it: other trees,
arguments, actions, tiers and configurations keep their values. Comments inside the
rewritten document cannot be kept (PyYAML drops them); callers are told when there were some.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from labeler.emit.volcano import (
    INIT_PARAMS,
    RESOURCE_LEVEL_CONFIG,
    SCHEDULER_CONF_KEY,
    resource_level_config,
    resource_level_config_string,
)
from labeler.emit.yamlio import dump
from labeler.errors import InputError, yaml_problem
from labeler.model import Topology

_SEPARATOR = re.compile(r"^---[ \t]*(#.*)?$", re.MULTILINE)
_COMMENT = re.compile(r"(^|\s)#")
_HOW = (
    "--merge-into takes the Volcano scheduler ConfigMap (e.g. `kubectl get configmap -n "
    "volcano-system volcano-scheduler-configmap -o yaml > cm.yaml`) or an installer file "
    f"that contains it, with data.{SCHEDULER_CONF_KEY}"
)


@dataclass(frozen=True)
class MergeResult:
    text: str  # the whole file, rewritten (equal to the input when unchanged)
    changed: bool
    previous: str | None  # the resource-level-config string before, if any
    value: str  # the resource-level-config string now
    notes: tuple[str, ...]  # things the operator should know (comments dropped, ...)


def _split(text: str) -> list[tuple[str, str]]:
    """(separator line or '', body) per document, so the file can be put back together."""
    parts: list[tuple[str, str]] = []
    last, sep = 0, ""
    for m in _SEPARATOR.finditer(text):
        parts.append((sep, text[last : m.start()]))
        end = m.end() + 1 if m.end() < len(text) and text[m.end()] == "\n" else m.end()
        sep, last = text[m.start() : end], end
    parts.append((sep, text[last:]))
    return parts


def _describe(doc: Any) -> str:
    if not isinstance(doc, dict):
        return type(doc).__name__
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    return f"{doc.get('kind', '?')}/{(meta or {}).get('name', '?')}"


def merge_resource_level_config(
    text: str, topology: Topology, *, origin: str, reserved_node: int | None = None
) -> MergeResult:
    """Return the file with this topology's ``resource-level-config`` set; see module doc."""
    parts = _split(text)
    found: list[tuple[int, dict[str, Any]]] = []
    seen: list[str] = []
    for i, (_, body) in enumerate(parts):
        try:
            doc = yaml.safe_load(body)
        except yaml.YAMLError as e:
            raise InputError(f"{yaml_problem(origin, e)} (document {i}); not valid YAML") from e
        if doc is None:
            continue
        seen.append(_describe(doc))
        data = doc.get("data") if isinstance(doc, dict) else None
        if (
            isinstance(doc, dict)
            and doc.get("kind") == "ConfigMap"
            and isinstance(data, dict)
            and SCHEDULER_CONF_KEY in data
        ):
            found.append((i, doc))
    if not found:
        what = ", ".join(seen) or "nothing"
        raise InputError(
            f"{origin} is not a Volcano scheduler ConfigMap: found {what}, and no ConfigMap "
            f"with data.{SCHEDULER_CONF_KEY}; {_HOW}"
        )
    if len(found) > 1:
        names = ", ".join(_describe(d) for _, d in found)
        raise InputError(
            f"{origin} holds {len(found)} ConfigMaps with data.{SCHEDULER_CONF_KEY} ({names}); "
            "keep only the one the scheduler mounts and try again"
        )
    index, doc = found[0]
    conf_text = doc["data"][SCHEDULER_CONF_KEY]
    if not isinstance(conf_text, str):
        raise InputError(f"{origin}: data.{SCHEDULER_CONF_KEY} must be a string; {_HOW}")
    try:
        conf = yaml.safe_load(conf_text)
    except yaml.YAMLError as e:
        raise InputError(
            f"{origin}: {yaml_problem('data.' + SCHEDULER_CONF_KEY, e)}; not valid YAML"
        ) from e
    if conf is None:
        conf = {}
    if not isinstance(conf, dict):
        raise InputError(f"{origin}: data.{SCHEDULER_CONF_KEY} must be a YAML mapping")
    configurations = conf.setdefault("configurations", [])
    if configurations is None:
        configurations = conf["configurations"] = []
    if not isinstance(configurations, list):
        raise InputError(
            f"{origin}: 'configurations' in {SCHEDULER_CONF_KEY} must be a list of "
            "{name, arguments} entries"
        )
    notes: list[str] = []
    entry = next(
        (c for c in configurations if isinstance(c, dict) and c.get("name") == INIT_PARAMS),
        None,
    )
    if entry is None:
        entry = {"name": INIT_PARAMS, "arguments": {}}
        configurations.append(entry)
        notes.append(f"added the {INIT_PARAMS} entry to configurations")
    arguments = entry.get("arguments")
    if arguments is None:
        arguments = entry["arguments"] = {}
    if not isinstance(arguments, dict):
        raise InputError(f"{origin}: {INIT_PARAMS} 'arguments' must be a mapping")

    previous = arguments.get(RESOURCE_LEVEL_CONFIG)
    trees: dict[str, Any] = {}
    if previous is not None:
        try:
            parsed = json.loads(previous) if isinstance(previous, str) else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            trees = parsed
        else:
            notes.append(f"replaced an unreadable {RESOURCE_LEVEL_CONFIG}: {previous!r}")
    ours = resource_level_config(topology, reserved_node)
    kept = sorted(t for t in trees if t != topology.name)
    if kept:
        notes.append(f"kept the other trees in {RESOURCE_LEVEL_CONFIG}: {', '.join(kept)}")
    merged = {**trees, **ours}
    value = resource_level_config_string(merged)
    if isinstance(previous, str) and trees == merged:
        return MergeResult(text, False, previous, previous, tuple(notes))
    arguments[RESOURCE_LEVEL_CONFIG] = value

    if _COMMENT.search(conf_text) or _COMMENT.search(parts[index][1]):
        notes.append(
            f"comments in the {_describe(doc)} document were not kept (YAML round trip); "
            "other documents are unchanged"
        )
    doc["data"][SCHEDULER_CONF_KEY] = dump(conf)
    parts[index] = (parts[index][0], dump(doc))
    new_text = "".join(sep + body for sep, body in parts)
    prev = previous if isinstance(previous, str) else None
    return MergeResult(new_text, True, prev, value, tuple(notes))
