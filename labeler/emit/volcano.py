"""Volcano scheduler and controller configuration that names the topology labels.

- ascend-for-volcano reads ``resource-level-config`` from the ``init-params`` entry of
  ``configurations:`` in ``volcano-scheduler.conf``: a JSON *string* mapping the tree name to
  ``level1`` (narrowest, the only one with ``reservedNode``) … ``levelN`` (widest).
- Volcano's HyperNode label discovery reads ``networkTopologyDiscovery`` from
  ``volcano-controller.conf``: widest … narrowest, then ``kubernetes.io/hostname`` (the last
  entry is always dropped by Volcano, so the hostname must be there).
"""

from __future__ import annotations

import json
import re
from typing import Any

from labeler.errors import InputError
from labeler.labels import DNS1123_LABEL_RE
from labeler.model import Topology

INIT_PARAMS = "init-params"
RESOURCE_LEVEL_CONFIG = "resource-level-config"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
MAX_DISCOVERY_NAME = 20


def resource_level_config(topology: Topology, reserved_node: int | None = None) -> dict[str, Any]:
    """``{tree: {"level1": {"label": narrowest, "reservedNode": n}, "level2": …}}``.

    ``reserved_node`` overrides the profile's level1 value; None keeps it (absent: omitted).
    """
    tree: dict[str, Any] = {}
    for name, level in topology.volcano_levels().items():
        entry: dict[str, Any] = {"label": level.key}
        if name == "level1":
            reserved = reserved_node if reserved_node is not None else level.reserved_node
            if reserved is not None:
                entry["reservedNode"] = reserved
        tree[name] = entry
    return {topology.name: tree}


def resource_level_config_string(config: dict[str, Any]) -> str:
    return json.dumps(config, separators=(", ", ": "))


def init_params_snippet(topology: Topology, reserved_node: int | None = None) -> dict[str, Any]:
    """The ``configurations:`` fragment to paste into ``volcano-scheduler.conf``."""
    value = resource_level_config_string(resource_level_config(topology, reserved_node))
    return {"configurations": [{"name": INIT_PARAMS, "arguments": {RESOURCE_LEVEL_CONFIG: value}}]}


def discovery_name_problems(name: str) -> list[str]:
    problems = []
    if len(name) > MAX_DISCOVERY_NAME:
        problems.append(f"is {len(name)} characters; Volcano allows at most {MAX_DISCOVERY_NAME}")
    if not DNS1123_LABEL_RE.fullmatch(name):  # plus Volcano's own length limit above
        problems.append(
            "must be lowercase letters, digits and '-', starting and ending alphanumeric"
        )
    return problems


def default_discovery_name(topology: Topology, profile_name: str) -> str:
    """A short DNS-label-safe name: the profile name (plus tree name when not default)."""
    base = profile_name if topology.name == "default" else f"{profile_name}-{topology.name}"
    slug = re.sub(r"[^a-z0-9-]+", "-", base.lower()).strip("-")
    return slug[:MAX_DISCOVERY_NAME].rstrip("-") or "topology"


def discovery_config(topology: Topology, name: str, interval: str = "1h") -> dict[str, Any]:
    """The ``networkTopologyDiscovery`` entry (``source: label``) for volcano-controller.conf."""
    problems = discovery_name_problems(name)
    if problems:
        raise InputError(
            [f"--discovery-name {name!r} {p}" for p in problems],
            heading="cannot build the Volcano label-discovery config:",
        )
    return {
        "networkTopologyDiscovery": [
            {
                "source": "label",
                "enabled": True,
                "interval": interval,
                "config": {
                    "networkTopologyTypes": {
                        name: [{"nodeLabel": key} for key in topology.discovery_levels()]
                    }
                },
            }
        ]
    }
