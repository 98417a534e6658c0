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
from dataclasses import dataclass
from typing import Any

from labeler.base.errors import InputError, UsageError
from labeler.core.labels import DNS1123_LABEL_RE
from labeler.core.model import Topology
from labeler.core.profiles import ASCEND_TREE_LABEL  # the only tree label ascend-for-volcano reads
from labeler.core.volcano import VERSION
from labeler.emit import Emitter, Output, Target
from labeler.emit.kinds import Kind

INIT_PARAMS = "init-params"
RESOURCE_LEVEL_CONFIG = "resource-level-config"
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
MAX_DISCOVERY_NAME = 20
DISCOVERY_FILE = "volcano-hypernode-discovery.yaml"
# Label discovery: 1.12 registers a "label" discoverer whose methods panic; 1.13 works but
# its HyperNodes have no tierName; 1.14 sets tierName to the label key (docs/compatibility.md)
DISCOVERY_SINCE = (1, 13)
# Go's time.ParseDuration: an optional sign, then "0" or number+unit pairs ("1h30m", ".5s")
_GO_DURATION = re.compile(r"[-+]?(?:0|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1,
    "m": 60,
    "h": 3600,
}
_PAIR = re.compile(r"([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)")


def ascend_tree_problem(topology: Topology) -> str | None:
    """Why ascend-for-volcano would match no node to this tree's resource-level-config.

    It reads the tree of a node from ``huawei.com/topotree`` only (a node without it is in
    tree ``default``), whatever label the profile uses.
    """
    if topology.tree_label not in (None, ASCEND_TREE_LABEL):
        return (
            f"the profile's tree label is {topology.tree_label}, but ascend-for-volcano reads "
            f"the tree only from {ASCEND_TREE_LABEL}, so no node would match tree "
            f"{topology.name!r}; set treeLabel: {ASCEND_TREE_LABEL} in the profile"
        )
    if topology.tree_label is None and topology.name != "default":
        return (
            f"ascend-for-volcano puts nodes without {ASCEND_TREE_LABEL} in tree 'default', so "
            f"none would match tree {topology.name!r}; set treeLabel: {ASCEND_TREE_LABEL} or "
            "drop treeName"
        )
    return None


def discovery_problem(version: tuple[int, int]) -> str | None:
    if version < DISCOVERY_SINCE:
        return (
            f"Volcano {version[0]}.{version[1]}'s label discoverer is a stub that panics when "
            "started; use static HyperNodes (--emit hypernodes) or Volcano 1.13 or later"
        )
    return None


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


def parse_discovery_interval(text: str) -> float:
    """Seconds in a Go duration; UsageError for anything Go's time.ParseDuration refuses.

    Volcano's controller reads ``interval`` into a ``time.Duration``: a value Go cannot parse
    (``1d``, ``3600``) stops the whole controller config from loading, and a non-positive
    one is silently replaced by one hour.
    """
    if not _GO_DURATION.fullmatch(text):
        raise UsageError(
            f"--discovery-interval {text!r}: use a Go duration such as 90s, 30m, 1h or 1h30m "
            "(units ns, us, ms, s, m, h; no days, a bare number needs a unit)"
        )
    sign = -1 if text.startswith("-") else 1
    seconds = sign * sum(float(n) * _UNIT_SECONDS[u] for n, u in _PAIR.findall(text))
    if seconds <= 0:
        raise UsageError(
            f"--discovery-interval {text!r}: must be more than 0 (Volcano replaces it by 1h)"
        )
    return seconds


def discovery_config(topology: Topology, name: str, interval: str) -> dict[str, Any]:
    """The ``networkTopologyDiscovery`` entry (``source: label``) for volcano-controller.conf."""
    parse_discovery_interval(interval)
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


@dataclass(frozen=True)
class VolcanoOptions:
    """``--reserved-node``: level1's reservedNode in resource-level-config."""

    reserved_node: int | None = None  # default: the profile's


def _init_params(target: Target, opts: VolcanoOptions) -> list[Output]:
    return [
        Output(
            "volcano-scheduler-init-params.yaml",
            "Volcano scheduler: merge into volcano-scheduler.conf (or use --merge-into)",
            (init_params_snippet(target.topology, opts.reserved_node),),
            applicable=False,
        )
    ]


def _init_params_unusable(target: Target, opts: VolcanoOptions) -> list[str]:
    why = ascend_tree_problem(target.topology)
    return [why] if why else []


VOLCANO = Emitter(Kind.VOLCANO, VolcanoOptions(), _init_params, _init_params_unusable)


@dataclass(frozen=True)
class DiscoveryOptions:
    """``--discovery-name``, ``--discovery-interval`` and ``--volcano-version``, for the
    controller's label discovery (an alternative to static HyperNodes)."""

    name: str | None = None  # networkTopologyTypes name; default: from the profile's name
    interval: str = "1h"  # a Go duration
    volcano_version: tuple[int, int] = VERSION


def _discovery(target: Target, opts: DiscoveryOptions) -> list[Output]:
    name = opts.name or default_discovery_name(target.topology, target.profile_name)
    return [
        Output(
            DISCOVERY_FILE,
            "Volcano controller: merge into volcano-controller.conf "
            "(label discovery; an alternative to static HyperNodes)",
            (discovery_config(target.topology, name, opts.interval),),
            applicable=False,
        )
    ]


def _discovery_unusable(target: Target, opts: DiscoveryOptions) -> list[str]:
    # Here: the check's module is needed only when discovery is asked for.
    from labeler.core.check import shared_across_trees

    reasons = []
    why = discovery_problem(opts.volcano_version)
    if why:
        reasons.append(why)
    if target.positions is not None and target.other_trees:
        shared = shared_across_trees(
            target.topology, target.positions, target.other_trees, max_nodes=3
        )
        if shared:
            reasons.append(
                f"label discovery would merge trees ({len(shared)} level value(s) are "
                f"used by several trees, e.g. {shared[0]})"
            )
    return reasons


DISCOVERY = Emitter(Kind.DISCOVERY, DiscoveryOptions(), _discovery, _discovery_unusable)
