"""Kueue's feature gates that change where pods go or what a node failure does.

The names, defaults and dependencies are those of the Kueue this simulator models
(``KUEUE_VERSION``; ``pkg/features/kube_features.go``). ``--kueue-feature-gates`` takes
Kueue's own ``--feature-gates`` syntax (component-base ``featuregate.Set``): comma-separated
``Name=bool`` pairs, spaces around names and values ignored, the value read as Go's
``strconv.ParseBool`` reads it. Kueue refuses to start when an enabled gate depends on a
disabled one, and so does ``advise``, with Kueue's message.

Not in the modelled Kueue: ``TASNodeFeasibilityForAllLevels``. When a topology's lowest
level is not the hostname, Kueue applies no per-node filter (taints, nodeSelector,
affinity) to its leaves, and neither does the simulator.

``Timing`` sits beside the gates: the other setting of how the modelled Kueue meets node
failures, light enough for the command line to read before anything else is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from labeler.base.errors import UsageError

KUEUE_VERSION = "Kueue v0.19.2"

TAS = "TopologyAwareScheduling"
PROFILE_MIXED = "TASProfileMixed"
BALANCED = "TASBalancedPlacement"
REPLACEMENT = "TASFailedNodeReplacement"
FAIL_FAST = "TASFailedNodeReplacementFailFast"
ON_POD_TERMINATION = "TASReplaceNodeOnPodTermination"
NOT_READY_FIXED_TIME = "TASReplaceNodeDueToNotReadyOverFixedTime"
ON_NODE_TAINTS = "TASReplaceNodeOnNodeTaints"
SKIP_POD_OWNED = "SkipReassignmentForPodOwnedWorkloads"


class Timing(StrEnum):
    """Several failed nodes of one Workload: all fail before Kueue replaced the first
    (its node controller then evicts the Workload), or each after the previous one was
    replaced."""

    TOGETHER = "together"
    ONE_BY_ONE = "one-by-one"


@dataclass(frozen=True)
class Gate:
    default: bool
    depends: tuple[str, ...]
    meaning: str


# Defaults as of the modelled version (the last entry of each gate's version list).
GATES: Mapping[str, Gate] = {
    TAS: Gate(default=True, depends=(), meaning="topology-aware scheduling itself"),
    PROFILE_MIXED: Gate(
        default=True, depends=(TAS,), meaning="LeastFreeCapacity for unconstrained requests"
    ),
    BALANCED: Gate(
        default=False, depends=(TAS,), meaning="balanced placement of preferred requests (alpha)"
    ),
    REPLACEMENT: Gate(default=True, depends=(TAS,), meaning="find a replacement for a failed node"),
    FAIL_FAST: Gate(
        default=True, depends=(TAS, REPLACEMENT), meaning="evict when no replacement is found"
    ),
    ON_POD_TERMINATION: Gate(
        default=True,
        depends=(TAS, REPLACEMENT),
        meaning="a NotReady node fails once the Workload's pods on it end",
    ),
    NOT_READY_FIXED_TIME: Gate(
        default=False,
        depends=(TAS, REPLACEMENT),
        meaning="a node fails after 30 s NotReady (deprecated)",
    ),
    ON_NODE_TAINTS: Gate(
        default=True,
        depends=(TAS,),
        meaning="an untolerated NoSchedule/NoExecute taint fails a node",
    ),
    SKIP_POD_OWNED: Gate(
        default=True, depends=(), meaning="a Workload owned by one Pod keeps its assignment"
    ),
}

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


@dataclass(frozen=True)
class Gates:
    """The effective value of every modelled gate."""

    values: Mapping[str, bool] = field(default_factory=dict)

    def on(self, name: str) -> bool:
        return self.values.get(name, GATES[name].default)

    @property
    def changed(self) -> dict[str, bool]:
        """The gates set to something other than their default."""
        return {k: v for k, v in sorted(self.values.items()) if v != GATES[k].default}


DEFAULT_GATES = Gates()


def gates_help() -> str:
    """One line per gate for ``--help``: its default and what it changes."""
    return "; ".join(
        f"{name} ({'on' if g.default else 'off'}: {g.meaning})" for name, g in GATES.items()
    )


def parse_gates(text: str | None) -> Gates:
    """``Name=bool,Name=bool`` as Kueue's ``--feature-gates`` reads it (UsageError)."""
    values: dict[str, bool] = {}
    for part in (text or "").split(","):
        if not part:
            continue
        key, eq, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq:
            raise UsageError(f"--kueue-feature-gates: missing bool value for {key}")
        if key not in GATES:
            raise UsageError(
                f"--kueue-feature-gates: unrecognized feature gate: {key} "
                f"(the gates advise models: {', '.join(GATES)})"
            )
        if raw not in _TRUE + _FALSE:
            raise UsageError(
                f"--kueue-feature-gates: invalid value of {key}={raw} (true or false, as Kueue)"
            )
        values[key] = raw in _TRUE
    gates = Gates(values)
    for name, gate in GATES.items():
        off = [d for d in gate.depends if not gates.on(d)]
        if gates.on(name) and off:
            raise UsageError(
                f"--kueue-feature-gates: {name} is enabled, but depends on features that are "
                f"disabled: [{' '.join(off)}] (Kueue refuses this too: disable {name} as well)"
            )
    if not gates.on(TAS):
        raise UsageError(
            f"--kueue-feature-gates: advise simulates topology-aware scheduling; {TAS} "
            "must stay enabled"
        )
    return gates
