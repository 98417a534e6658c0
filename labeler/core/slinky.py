"""Slurm's names for the topology, and the Slinky node annotation that carries them.

Switch and block names come from the level name and the label value only (hashed when the
value has characters outside ``[A-Za-z0-9_-]`` or the name would be too long), so they do
not move when nodes are added, and one node's annotation can be computed from its own
labels: the agent and ``apply`` keep the annotation, ``generate --emit slurm`` writes the
topology files that name the same switches and blocks (``labeler.emit.slurm``). A dot is
avoided because Slurm joins switch names with dots in ``SLURM_TOPOLOGY_ADDR``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from labeler.core.labels import NAME_HASH_LENGTH, digest, dns_name
from labeler.core.model import Level, Topology
from labeler.core.node import SLINKY_ANNOTATION
from labeler.core.plan import Desired

MAX_NAME = 64  # topology.conf(5), topology.yaml(5): "cannot be longer than 64 characters"
_NAME_OK = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class SlurmNames:
    """The topology names used in topology.yaml and in the Slinky annotation."""

    tree: str
    block: str | None  # None: the profile marks no block level


def topology_names(topology: Topology, base: str) -> SlurmNames:
    """``base`` for the tree, ``<base>-block`` for the block topology (if any)."""
    name = dns_name(base)
    return SlurmNames(tree=name, block=f"{name}-block" if topology.block_level else None)


def switch_name(level: Level, value: str) -> str:
    """``<level name>-<value>``: stable, at most 64 characters, safe in a hostlist."""
    lname = re.sub(r"[^A-Za-z0-9_-]+", "_", level.name) or "level"
    name = f"{lname}-{value}"
    if _NAME_OK.fullmatch(value) and len(name) <= MAX_NAME:
        return name
    # Lossy or too long: keep what fits and add a digest of the exact key and value, so two
    # values that clean up to the same text still get distinct names.
    clean = re.sub(r"[^A-Za-z0-9_-]+", "_", name)
    keep = MAX_NAME - NAME_HASH_LENGTH - 1
    return f"{clean[:keep]}-{digest(level.key + chr(0) + value, NAME_HASH_LENGTH)}"


def node_spec(topology: Topology, values: Sequence[str | None], names: SlurmNames) -> str | None:
    """The Slinky ``topology.slinky.slurm.net/spec`` value for a node at ``values``:
    ``<tree>:<leaf switch>[,<block topology>:<block>]``; None without a narrowest value."""
    leaf = values[-1]
    if leaf is None:
        return None
    parts = [f"{names.tree}:{switch_name(topology.levels[-1], leaf)}"]
    block = topology.block_level
    if block is not None and names.block is not None:
        bvalue = values[topology.index(block.key)]
        if bvalue is None:
            return None
        parts.append(f"{names.block}:{switch_name(block, bvalue)}")
    return ",".join(parts)


@dataclass(frozen=True)
class Slinky:
    """Keeps ``topology.slinky.slurm.net/spec`` on a node: Slinky's slurm-operator copies it
    to the Slurm node as its dynamic topology (``<topology>:<unit>`` pairs), naming the leaf
    switch and block that ``generate --emit slurm`` wrote for the node's labels."""

    topology: Topology
    names: SlurmNames

    def add_to(self, desired: Desired, labels: Mapping[str, str]) -> Desired:
        """``desired`` plus the annotation for the labels the node has once it is applied
        (``labels`` overlaid with what ``desired`` sets and removes); no spec (a level is
        missing): our annotation, if any, is removed."""
        after = {**labels, **desired.set}
        for key in desired.remove:
            after.pop(key, None)
        spec = node_spec(self.topology, [after.get(k) for k in self.topology.keys], self.names)
        return dataclasses.replace(
            desired,
            annotations={SLINKY_ANNOTATION: spec} if spec else {},
            prune_annotations=frozenset({SLINKY_ANNOTATION}),
        )
