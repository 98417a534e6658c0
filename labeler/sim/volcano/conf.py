"""Volcano's scheduler configuration (``volcano-scheduler.conf``): actions, tiers, plugins.

Read as ``pkg/scheduler/conf`` defines it. Every ``enable…`` switch a plugin option leaves
out is on (``plugins.ApplyPluginConfDefaults``); the YAML keys are Volcano's own, some
spelled ``enable…`` and some ``enabled…``. Without a configuration the scheduler runs the
one Volcano's Helm chart installs (``installer/helm/chart/volcano/config/
volcano-scheduler.conf``, the same from v1.12 to v1.15.0): it has no
``network-topology-aware`` plugin, so a job's ``networkTopology`` is not enforced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import InputError
from labeler.base.yamlsafe import parse
from labeler.sim.common.fields import as_map

CONF_KEY = "volcano-scheduler.conf"
CONFIGMAP_NAMESPACE = "volcano-system"
CONFIGMAP_NAME = "volcano-scheduler-configmap"

# extension point -> the option key that switches it (conf.PluginOption's yaml tags)
SWITCHES = {
    "jobOrder": "enableJobOrder",
    "jobReady": "enableJobReady",
    "jobPipelined": "enableJobPipelined",
    "taskOrder": "enableTaskOrder",
    "queueOrder": "enableQueueOrder",
    "predicate": "enablePredicate",
    "bestNode": "enableBestNode",
    "nodeOrder": "enableNodeOrder",
    "jobEnqueued": "enableJobEnqueued",
    "overused": "enabledOverused",
    "allocatable": "enabledAllocatable",
    "hyperNodeOrder": "enabledHyperNodeOrder",
    "subJobReady": "enabledSubJobReady",
    "subJobPipelined": "enabledSubJobPipelined",
    "subJobOrder": "enabledSubJobOrder",
    "hyperNodeGradient": "enabledHyperNodeGradient",
}
OTHER_KEYS = frozenset(
    {
        "name",
        "arguments",
        "enableHierarchy",
        "enablePreemptable",
        "enableReclaimable",
        "enablePreemptive",
        # conf.PluginOption's tag in v1.15.0; later releases spell it enabledClusterOrder.
        "EnabledClusterOrder",
        "enabledClusterOrder",
        "enableTargetJob",
        "enableReservedNodes",
        "enabledVictim",
        "enableJobStarving",
    }
)
KNOWN_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle")
# plugins whose effect on placing one pending job is simulated
SIMULATED = frozenset(
    {
        "gang",
        "priority",
        "predicates",
        "proportion",
        "capacity",
        "overcommit",
        "binpack",
        "nodeorder",
        "network-topology-aware",
    }
)

HELM_DEFAULT = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


@dataclass(frozen=True)
class Plugin:
    name: str
    switches: Mapping[str, bool] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def on(self, point: str) -> bool:
        return self.switches.get(point, True)


@dataclass(frozen=True)
class SchedulerConf:
    actions: tuple[str, ...]
    tiers: tuple[tuple[Plugin, ...], ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = "Volcano's default configuration (Helm chart)"

    def plugins(self) -> list[Plugin]:
        return [p for tier in self.tiers for p in tier]

    def plugin(self, name: str) -> Plugin | None:
        return next((p for p in self.plugins() if p.name == name), None)

    def enabled(self, name: str, point: str) -> bool:
        """The plugin is configured and its ``point`` is switched on."""
        p = self.plugin(name)
        return p is not None and p.on(point)

    def not_simulated(self) -> list[str]:
        return sorted({p.name for p in self.plugins()} - SIMULATED)


def _plugin(raw: Any, where: str) -> Plugin:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise InputError(f"{where}: a plugin needs a name")
    unknown = sorted(set(map(str, raw)) - set(SWITCHES.values()) - OTHER_KEYS)
    if unknown:
        raise InputError(
            f"{where} ({raw['name']}): unknown key(s) {', '.join(unknown)}; Volcano's keys "
            f"are {', '.join(sorted(SWITCHES.values()))}, arguments, …"
        )
    switches = {}
    for point, key in SWITCHES.items():
        if key in raw:
            if not isinstance(raw[key], bool):
                raise InputError(f"{where} ({raw['name']}): {key} must be true or false")
            switches[point] = raw[key]
    args = raw.get("arguments") or {}
    if not isinstance(args, Mapping):
        raise InputError(f"{where} ({raw['name']}): arguments must be a mapping")
    return Plugin(raw["name"], switches, {str(k): v for k, v in args.items()})


def parse_conf(text: str, origin: str) -> SchedulerConf:
    """A ``volcano-scheduler.conf`` document (InputError naming ``origin``)."""
    doc = parse(text, origin)
    if not isinstance(doc, Mapping):
        raise InputError(f"{origin}: a scheduler configuration is a mapping (actions, tiers)")
    actions = tuple(a.strip() for a in str(doc.get("actions") or "").split(",") if a.strip())
    bad = [a for a in actions if a not in KNOWN_ACTIONS]
    if bad:
        raise InputError(
            f"{origin}: failed to find Action {bad[0]} (Volcano refuses this configuration); "
            f"actions are {', '.join(KNOWN_ACTIONS)}"
        )
    tiers = []
    for i, tier in enumerate(doc.get("tiers") or []):
        plugins = tier.get("plugins") if isinstance(tier, Mapping) else None
        if not isinstance(plugins, list):
            raise InputError(f"{origin}: tiers[{i}] needs a plugins list")
        tiers.append(
            tuple(_plugin(p, f"{origin}: tiers[{i}].plugins[{j}]") for j, p in enumerate(plugins))
        )
    confs = {}
    for i, c in enumerate(doc.get("configurations") or []):
        if not isinstance(c, Mapping) or not c.get("name"):
            raise InputError(f"{origin}: configurations[{i}] needs a name")
        confs[str(c["name"])] = dict(c.get("arguments") or {})
    return SchedulerConf(actions, tuple(tiers), confs, source=origin)


def default_conf(version: tuple[int, int]) -> SchedulerConf:
    conf = parse_conf(HELM_DEFAULT, "Volcano's default configuration")
    label = f"Volcano {version[0]}.{version[1]}'s default configuration (its Helm chart)"
    return SchedulerConf(conf.actions, conf.tiers, conf.configurations, source=label)


def conf_from_configmap(obj: Mapping[str, Any], origin: str) -> SchedulerConf:
    """The configuration held by the scheduler's ConfigMap."""
    data = as_map(obj.get("data"))
    key = (
        CONF_KEY if CONF_KEY in data else next((k for k in data if str(k).endswith(".conf")), None)
    )
    if key is None:
        raise InputError(f"{origin}: the ConfigMap has no {CONF_KEY} key")
    meta = as_map(obj.get("metadata"))
    where = f"{origin} (ConfigMap {meta.get('namespace', '')}/{meta.get('name', '')}, {key})"
    return parse_conf(str(data[key]), where)


def read_conf_text(text: str, origin: str) -> SchedulerConf:
    """A file holding the configuration itself, or the ConfigMap that carries it."""
    doc = parse(text, origin)
    if isinstance(doc, Mapping) and doc.get("kind") == "ConfigMap":
        return conf_from_configmap(doc, origin)
    return parse_conf(text, origin)
