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

from labeler.base.errors import InputError, yaml_problem
from labeler.base.yamlsafe import parse
from labeler.core.model import Topology
from labeler.emit.volcano import (
    INIT_PARAMS,
    RESOURCE_LEVEL_CONFIG,
    SCHEDULER_CONF_KEY,
    ascend_tree_problem,
    resource_level_config,
    resource_level_config_string,
)
from labeler.emit.yamlio import dump

NETWORK_TOPOLOGY_PLUGIN = "network-topology-aware"
ASCEND_PLUGIN_PREFIX = "volcano-npu"  # ascend-for-volcano's plugin: volcano-npu_<version>...
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


def _reserved_node(tree: Any) -> int | None:
    """level1's reservedNode of a parsed resource-level-config tree, when it is an integer."""
    level1 = tree.get("level1") if isinstance(tree, dict) else None
    value = level1.get("reservedNode") if isinstance(level1, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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


def _plugin_names(conf: dict[str, Any]) -> list[str] | None:
    """Names of the plugins in ``tiers``, or None when there are no readable tiers."""
    tiers = conf.get("tiers")
    if not isinstance(tiers, list) or not tiers:
        return None
    names: list[str] = []
    for tier in tiers:
        plugins = tier.get("plugins") if isinstance(tier, dict) else None
        if isinstance(plugins, list):
            names += [str(p.get("name")) for p in plugins if isinstance(p, dict)]
    return names


def _ensure_network_topology_plugin(conf: dict[str, Any], notes: list[str]) -> bool:
    """Add ``network-topology-aware`` to the last tier; True when the config changed.

    Without it the scheduler ignores HyperNodes and every job's networkTopology.
    """
    names = _plugin_names(conf)
    if names is None:
        notes.append(
            f"warning: {SCHEDULER_CONF_KEY} has no readable 'tiers', so the "
            f"{NETWORK_TOPOLOGY_PLUGIN} plugin is missing; add it, or the scheduler ignores "
            "the HyperNodes"
        )
        return False
    if NETWORK_TOPOLOGY_PLUGIN in names:
        return False
    last = conf["tiers"][-1]
    if not isinstance(last, dict) or not isinstance(last.get("plugins"), list):
        notes.append(
            f"warning: the {NETWORK_TOPOLOGY_PLUGIN} plugin is missing from the tiers and the "
            "last tier has no plugins list to add it to; add it, or the scheduler ignores the "
            "HyperNodes"
        )
        return False
    last["plugins"].append({"name": NETWORK_TOPOLOGY_PLUGIN})
    notes.append(
        f"added the {NETWORK_TOPOLOGY_PLUGIN} plugin to the last tier (the scheduler reads "
        "HyperNodes only through it)"
    )
    return True


def merge_resource_level_config(
    text: str,
    topology: Topology,
    *,
    origin: str,
    reserved_node: int | None = None,
    network_topology: bool = False,
) -> MergeResult:
    """Return the file with this topology's ``resource-level-config`` set; see module doc.

    An existing ``reservedNode`` of this tree is kept unless ``reserved_node`` is given.
    ``network_topology`` (HyperNodes are generated too) also makes sure the
    ``network-topology-aware`` plugin is in the scheduler's tiers.
    """
    if (why := ascend_tree_problem(topology)) is not None:
        raise InputError(f"--merge-into {origin}: not changed: {why}")
    parts = _split(text)
    index, doc = _scheduler_configmap(parts, origin)
    conf_text, conf = _scheduler_conf(doc, origin)
    notes: list[str] = []
    arguments = _init_params_arguments(conf, origin, notes)
    previous = arguments.get(RESOURCE_LEVEL_CONFIG)
    trees = _trees(previous, notes)
    ours = _our_tree(topology, reserved_node, trees, notes)
    plugins = _plugin_names(conf) or []
    if not any(n.startswith(ASCEND_PLUGIN_PREFIX) for n in plugins):
        notes.append(
            f"warning: no {ASCEND_PLUGIN_PREFIX}* (ascend-for-volcano) plugin in the tiers: "
            f"nothing reads {INIT_PARAMS} until it is enabled"
        )
    plugin_added = network_topology and _ensure_network_topology_plugin(conf, notes)
    kept = sorted(t for t in trees if t != topology.name)
    if kept:
        notes.append(f"kept the other trees in {RESOURCE_LEVEL_CONFIG}: {', '.join(kept)}")
    merged = {**trees, **ours}
    value = resource_level_config_string(merged)
    if isinstance(previous, str) and trees == merged and not plugin_added:
        return MergeResult(
            text, changed=False, previous=previous, value=previous, notes=tuple(notes)
        )
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
    return MergeResult(new_text, changed=True, previous=prev, value=value, notes=tuple(notes))


def _scheduler_configmap(parts: list[tuple[str, str]], origin: str) -> tuple[int, dict[str, Any]]:
    """The one document that is a ConfigMap with the scheduler's config, and its index."""
    found: list[tuple[int, dict[str, Any]]] = []
    seen: list[str] = []
    for i, (_, body) in enumerate(parts):
        try:
            doc = parse(body, origin)
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
    return found[0]


def _scheduler_conf(doc: dict[str, Any], origin: str) -> tuple[str, dict[str, Any]]:
    """The embedded scheduler config, as written and parsed (a mapping)."""
    conf_text = doc["data"][SCHEDULER_CONF_KEY]
    if not isinstance(conf_text, str):
        raise InputError(f"{origin}: data.{SCHEDULER_CONF_KEY} must be a string; {_HOW}")
    where = f"{origin}: data.{SCHEDULER_CONF_KEY}"
    try:
        conf = parse(conf_text, where)
    except yaml.YAMLError as e:
        raise InputError(
            f"{origin}: {yaml_problem('data.' + SCHEDULER_CONF_KEY, e)}; not valid YAML"
        ) from e
    if conf is None:
        conf = {}
    if not isinstance(conf, dict):
        raise InputError(f"{origin}: data.{SCHEDULER_CONF_KEY} must be a YAML mapping")
    return conf_text, conf


def _init_params_arguments(conf: dict[str, Any], origin: str, notes: list[str]) -> dict[str, Any]:
    """The ``arguments`` of the ``init-params`` configuration, added when absent."""
    configurations = conf.setdefault("configurations", [])
    if configurations is None:
        configurations = conf["configurations"] = []
    if not isinstance(configurations, list):
        raise InputError(
            f"{origin}: 'configurations' in {SCHEDULER_CONF_KEY} must be a list of "
            "{name, arguments} entries"
        )
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
    return arguments


def _trees(previous: Any, notes: list[str]) -> dict[str, Any]:
    """The trees of the resource-level-config already there; none when it is unreadable."""
    if previous is None:
        return {}
    try:
        parsed = json.loads(previous) if isinstance(previous, str) else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    notes.append(f"replaced an unreadable {RESOURCE_LEVEL_CONFIG}: {previous!r}")
    return {}


def _our_tree(
    topology: Topology, reserved_node: int | None, trees: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """This topology's entry, keeping its reservedNode unless ``reserved_node`` is given."""
    ours = resource_level_config(topology, reserved_node)
    existing = _reserved_node(trees.get(topology.name))
    if reserved_node is None and existing is not None:
        level1 = ours[topology.name]["level1"]
        if level1.get("reservedNode") != existing:
            notes.append(
                f"kept reservedNode {existing} of tree {topology.name!r} (give --reserved-node "
                "to change it)"
            )
        level1["reservedNode"] = existing
    return ours
