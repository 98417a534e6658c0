"""Kueue Topology-Aware Scheduling objects: ``Topology`` and ``ResourceFlavor`` (v1beta2).

Rules from the Kueue CRDs (v0.19.2 and main): Topology levels 1–16, unique, the hostname
only last; a ResourceFlavor with ``topologyName`` needs 1–8 ``nodeLabels``; at most 8
tolerations. The level order comes from :meth:`Topology.kueue_levels`, never re-derived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import InputError
from labeler.core.labels import dns1123_subdomain_problems, dns_name, key_problems, value_problems
from labeler.core.model import HOSTNAME_LABEL, Topology
from labeler.emit import Emitter, Output, Target
from labeler.emit.kinds import Kind

API_VERSION = "kueue.x-k8s.io/v1beta2"
MAX_LEVELS = 16
MAX_NODE_LABELS = 8
MAX_TOLERATIONS = 8
MANAGED_BY = {"app.kubernetes.io/managed-by": "topology-labeler"}
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True)
class Toleration:
    """A toleration added to admitted pods, written as kubectl writes taints."""

    key: str
    effect: str
    value: str | None = None  # None: operator Exists

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key}
        if self.value is None:
            out["operator"] = "Exists"
        else:
            out["operator"] = "Equal"
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        return out


def parse_toleration(spec: str) -> Toleration:
    """``key[=value][:Effect]`` (kubectl taint syntax); no value means operator Exists."""
    body, sep, effect = spec.rpartition(":")
    if not sep:
        body, effect = spec, ""
    key, eq, value = body.partition("=")
    problems = [f"key {key!r}: {p}" for p in key_problems(key)]
    if eq:
        problems += [f"value {value!r}: {p}" for p in value_problems(value)]
    if effect and effect not in _EFFECTS:
        problems.append(f"effect {effect!r} is not one of {', '.join(_EFFECTS)}")
    if problems:
        raise InputError(problems, heading=f"toleration {spec!r}: use key[=value][:Effect]")
    return Toleration(key=key, effect=effect, value=value if eq else None)


def _name_problems(flag: str, name: str) -> list[str]:
    return [f"{flag} {name!r} {p}" for p in dns1123_subdomain_problems(name)]


def topology_object(topology: Topology, name: str) -> dict[str, Any]:
    """The Kueue ``Topology``: levels widest → narrowest, then ``kubernetes.io/hostname``."""
    levels = topology.kueue_levels()
    problems = _name_problems("--topology-name", name)
    if len(levels) > MAX_LEVELS:
        problems.append(
            f"the profile has {len(levels) - 1} levels, and Kueue allows at most {MAX_LEVELS} "
            f"including {HOSTNAME_LABEL}, which is always added last: use at most "
            f"{MAX_LEVELS - 1} levels in the profile, or leave kueue out of --emit"
        )
    if problems:
        raise InputError(problems, heading="cannot build the Kueue Topology:")
    return {
        "apiVersion": API_VERSION,
        "kind": "Topology",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": {"levels": [{"nodeLabel": key} for key in levels]},
    }


def resource_flavor(
    name: str,
    topology_name: str,
    node_labels: Mapping[str, str],
    tolerations: Sequence[Toleration] = (),
) -> dict[str, Any]:
    """A ``ResourceFlavor`` bound to the Topology; Kueue requires 1–8 nodeLabels with it."""
    problems = _name_problems("--flavor-name", name)
    if not node_labels:
        problems.append(
            "a ResourceFlavor with a topologyName needs at least one --flavor-node-label "
            "(e.g. --flavor-node-label node.kubernetes.io/instance-type=BM.GPU.H100.8)"
        )
    if len(node_labels) > MAX_NODE_LABELS:
        problems.append(
            f"{len(node_labels)} --flavor-node-label given; Kueue allows at most {MAX_NODE_LABELS}"
        )
    if len(tolerations) > MAX_TOLERATIONS:
        problems.append(
            f"{len(tolerations)} --flavor-toleration given; Kueue allows at most {MAX_TOLERATIONS}"
        )
    if problems:
        raise InputError(problems, heading="cannot build the Kueue ResourceFlavor:")
    spec: dict[str, Any] = {"nodeLabels": dict(node_labels)}
    if tolerations:
        spec["tolerations"] = [t.as_dict() for t in tolerations]
    spec["topologyName"] = topology_name
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": spec,
    }


@dataclass(frozen=True)
class KueueOptions:
    """``--topology-name``, ``--flavor-name``, ``--flavor-node-label``, ``--flavor-toleration``.
    Without node labels there is no ResourceFlavor (it could not say which nodes it covers)."""

    topology_name: str | None = None  # default: the profile name, made DNS-safe
    flavor_name: str | None = None  # default: the Topology's name
    flavor_node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


def topology_name(target: Target, opts: KueueOptions) -> str:
    """``--topology-name``, else the profile name made DNS-safe (``lab_fabric`` →
    ``lab-fabric``): a profile name is free text, an object name is not."""
    return opts.topology_name or dns_name(target.profile_name)


def outputs(target: Target, opts: KueueOptions) -> list[Output]:
    """The Topology, and its ResourceFlavor when nodeLabels say which nodes it covers."""
    name = topology_name(target, opts)
    out = [
        Output(
            "kueue-topology.yaml",
            f"Kueue Topology {name}: kubectl apply -f this file",
            (topology_object(target.topology, name),),
            applicable=True,
        )
    ]
    if opts.flavor_node_labels:
        flavor = opts.flavor_name or name
        out.append(
            Output(
                "kueue-resourceflavor.yaml",
                f"Kueue ResourceFlavor {flavor} (topologyName {name}): kubectl apply -f",
                (resource_flavor(flavor, name, opts.flavor_node_labels, opts.tolerations),),
                applicable=True,
            )
        )
    return out


EMITTER = Emitter(Kind.KUEUE, KueueOptions(), outputs)
