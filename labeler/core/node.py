"""A Node as the tools see it, read from its plain JSON/YAML object (pure, no client).

One model for every reader: ``labeler.kube.nodes`` builds it from API responses, the
placement simulator from snapshot files, the audit from watch events. Reading is lenient
(a missing field has its Kubernetes default; a malformed taint or condition entry is
skipped) because snapshot files are often written by hand; callers that must reject bad
input (the simulator) check the fields they need before calling :meth:`NodeInfo.from_dict`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

OWNED_ANNOTATION = "topology-labeler.io/owned-labels"
OWNERS_ANNOTATION = "topology-labeler.io/owned-by"
SOURCE_IDS_ANNOTATION = "topology-labeler.io/source-ids"
# Annotations other tools read (the Slinky topology spec) that we wrote, with the writer
# of ours that owns each: the ownership rules of labels, for annotation keys.
OWNED_ANNOTATIONS_ANNOTATION = "topology-labeler.io/owned-annotations"
# Slinky's slurm-operator copies it to the Slurm node's dynamic topology (emit/slurm.py).
SLINKY_ANNOTATION = "topology.slinky.slurm.net/spec"


@dataclass(frozen=True)
class NodeLabels:
    """The part of a Node a label writer looks at."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    resource_version: str = ""

    @property
    def owned(self) -> frozenset[str]:
        return parse_owned(self.annotations.get(OWNED_ANNOTATION, ""))

    @property
    def owners(self) -> dict[str, str]:
        """Owned key → the writer of ours that owns it (``agent``, ``bulk``). An owned key
        with no entry (written before writers were recorded, or a default) has no writer:
        any writer of ours may change it. Entries for keys no longer owned are ignored."""
        return owners_of(self.owned, self.annotations.get(OWNERS_ANNOTATION, ""))

    @property
    def annotation_owners(self) -> dict[str, str]:
        """Annotation we wrote → the writer of ours that owns it ("" for none in particular):
        the owned-labels and owned-by pair for labels, kept in one JSON map."""
        return parse_json_map(self.annotations.get(OWNED_ANNOTATIONS_ANNOTATION, ""))

    @property
    def source_ids(self) -> dict[str, str]:
        return parse_json_map(self.annotations.get(SOURCE_IDS_ANNOTATION, ""))


def owners_of(owned: frozenset[str], text: str) -> dict[str, str]:
    """:attr:`NodeLabels.owners` from the owned keys and the owned-by annotation's text."""
    return {k: v for k, v in json_map(text).items() if k in owned and v}


# The parsers below are cached by the annotation's text: planning a bulk apply reads the
# same few owned-labels/owned-by strings on thousands of nodes. The cached values are
# immutable (a frozenset, a read-only mapping), so no caller can change another's.
_PARSED = 1024  # distinct texts kept; more only costs a parse again
_EMPTY: Mapping[str, str] = MappingProxyType({})


@functools.lru_cache(maxsize=_PARSED)
def parse_owned(text: str) -> frozenset[str]:
    """Comma-separated as written; whitespace also separates (no label key contains any),
    so a hand edit with spaces or one key per line does not lose every key it lists."""
    return frozenset(text.replace(",", " ").split())


def parse_json_map(text: str) -> dict[str, str]:
    """Tolerant: a hand-edited or corrupt annotation is treated as empty, then rewritten.
    A new dict, the caller's to change (:func:`json_map` to only read it)."""
    return dict(json_map(text))


@functools.lru_cache(maxsize=_PARSED)
def json_map(text: str) -> Mapping[str, str]:
    """:func:`parse_json_map`, read-only and shared by every caller with the same text."""
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return _EMPTY
    if not isinstance(doc, dict):
        return _EMPTY
    return MappingProxyType({str(k): str(v) for k, v in doc.items()})


TERMINATED_PHASES = ("Succeeded", "Failed")
"""Pod phases after which a pod holds nothing on its node (``status.phase``)."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        """``key=value:Effect`` or ``key:Effect``, as ``corev1.Taint.ToString`` prints it."""
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


def taints_of(spec: Mapping[str, Any]) -> tuple[Taint, ...]:
    """``spec.taints`` (entries that are not objects are skipped)."""
    return tuple(
        Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", "")))
        for t in spec.get("taints") or []
        if isinstance(t, Mapping)
    )


# The Node condition the agent keeps with --set-condition (its readiness gate).
TOPOLOGY_CONDITION = "TopologyLabeled"


def topology_condition(status: Mapping[str, Any]) -> tuple[str, str] | None:
    """(status, reason) of the agent's TopologyLabeled condition, if the node has it."""
    for c in status.get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == TOPOLOGY_CONDITION:
            return str(c.get("status", "")), str(c.get("reason", ""))
    return None


def is_ready(status: Mapping[str, Any]) -> bool:
    """The Ready condition is True; a node without conditions counts as Ready (hand-written
    snapshots often omit status)."""
    conditions = status.get("conditions") or []
    if not conditions:
        return True
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )


@dataclass(frozen=True)
class NodeInfo(NodeLabels):
    """A node as the tools see it: labels, annotations and scheduling facts."""

    allocatable: Mapping[str, str] = field(default_factory=dict)
    ready: bool = True
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    uid: str = ""  # for Events about the node (involvedObject.uid)
    condition: tuple[str, str] | None = None  # the TopologyLabeled condition's (status, reason)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> NodeInfo:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return cls(
            name=meta.get("name", ""),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            resource_version=str(meta.get("resourceVersion") or ""),
            allocatable=dict(status.get("allocatable") or {}),
            ready=is_ready(status),
            unschedulable=bool(spec.get("unschedulable")),
            taints=taints_of(spec),
            uid=str(meta.get("uid") or ""),
            condition=topology_condition(status),
        )
