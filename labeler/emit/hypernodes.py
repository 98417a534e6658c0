"""Static Volcano ``HyperNode``s (topology.volcano.sh/v1alpha1) built from positions.

Tier 1 holds one HyperNode per narrowest domain whose members are the nodes; tier k+1 one
per domain of the next wider level whose members are the tier-k HyperNodes (Volcano
resolves HyperNode members by ``exactMatch`` only, and each HyperNode has one parent).

Names are derived from the level name and the label value only, so they stay the same when
nodes are added or removed: a value that is not already DNS-safe, or a name that would
exceed 63 characters (older admission rules limit exactMatch names to 63), gets a short
SHA-256 suffix of the original. The label ``volcano.sh/network-topology-source`` is never
set: Volcano's discovery controller deletes HyperNodes carrying it that it did not find.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from labeler.base.errors import InputError
from labeler.base.logs import logger
from labeler.core.labels import NAME_HASH_LENGTH as HASH_LEN
from labeler.core.labels import digest, dns_name, slug
from labeler.core.model import Level, NodePosition, Topology
from labeler.core.positions import DEFAULT_TREE
from labeler.core.volcano import VERSION, MemberType
from labeler.emit import Emitter, Output, Target
from labeler.emit.kinds import Kind

log = logger(__name__)

API_VERSION = "topology.volcano.sh/v1alpha1"
MAX_NAME = 63
MANAGED_BY = {"app.kubernetes.io/managed-by": "topology-labeler"}
LEVEL_ANNOTATION = "topology-labeler.io/level-label"
OWNER_LABEL = "topology-labeler.io/topology"
DISCOVERY_SOURCE_LABEL = "volcano.sh/network-topology-source"  # never set (see module doc)
TIER_NAME_SINCE = (1, 14)
HYPERNODES_FILE = "volcano-hypernodes.yaml"
# Plain strings, looked up once: a member is written per node (100,000 of them), and an
# enum member's value is a property read each time.
_NODE, _HYPERNODE = MemberType.NODE.value, MemberType.HYPERNODE.value
_PREFIX_RE = re.compile(r"^[a-z0-9][-a-z0-9]{0,39}$")


class NodeMembers(StrEnum):
    """How a tier-1 HyperNode names its nodes: one member per node, or one ``labelMatch``
    on the narrowest label (which picks up new nodes by itself)."""

    NAMES = "names"
    LABELS = "labels"


@dataclass(frozen=True)
class HyperNodeOptions:
    prefix: str = ""  # e.g. "oci-"; must itself be DNS-safe
    volcano_version: tuple[int, int] = VERSION
    node_members: NodeMembers = NodeMembers.NAMES
    owner: str = ""  # value of OWNER_LABEL, so --prune touches only this topology's HyperNodes


def parse_version(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"v?(\d+)\.(\d+)(\.\d+)?", text.strip())
    if not m:
        raise InputError(f"Volcano version {text!r}: use MAJOR.MINOR, e.g. 1.14 or v1.13.2")
    return int(m.group(1)), int(m.group(2))


def prefix_problems(prefix: str) -> list[str]:
    """What is wrong with a HyperNode name prefix ([] when it is fine, or empty)."""
    if not prefix or _PREFIX_RE.fullmatch(prefix):
        return []
    return [
        "must be lowercase letters, digits and '-', starting with a letter or digit "
        "(at most 40 characters)"
    ]


def owner_value(profile_name: str, tree_name: str) -> str:
    """A label value naming one generated topology: profile, plus tree when not default."""
    return dns_name(profile_name if tree_name == "default" else f"{profile_name}-{tree_name}")


def hypernode_name(level: Level, value: str, prefix: str = "") -> str:
    """``<prefix><level-name>-<value>``, DNS-safe, at most 63 characters, stable."""
    value_slug = slug(value)
    if (
        value_slug != value or not value
    ):  # lossy (case, dots, underscores, empty): keep names distinct
        value_slug = (
            f"{value_slug}-{digest(value, HASH_LEN)}" if value_slug else digest(value, HASH_LEN)
        )
    name = f"{prefix}{slug(level.name)}-{value_slug}"
    if len(name) > MAX_NAME:
        keep = MAX_NAME - HASH_LEN - 1
        name = f"{name[:keep].rstrip('-')}-{digest(prefix + level.key + chr(0) + value, HASH_LEN)}"
    return name


def node_member(node: str) -> dict[str, Any]:
    """``exactMatch`` for names up to 63 characters, else an anchored ``regexMatch``."""
    if len(node) <= MAX_NAME:
        return {"type": _NODE, "selector": {"exactMatch": {"name": node}}}
    pattern = "^" + node.replace(".", r"\.") + "$"
    return {"type": _NODE, "selector": {"regexMatch": {"pattern": pattern}}}


def choose_parents(topology: Topology, positions: Sequence[NodePosition], i: int) -> dict[str, str]:
    """Child value at level i → the parent value at level i-1 (majority if conflicting)."""
    votes: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for p in positions:
        child, parent = p.values[i], p.values[i - 1]
        if child is not None and parent is not None:
            votes[child][parent] += 1
    chosen = {}
    for child, counter in votes.items():
        best = min(counter.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        if len(counter) > 1:
            log.warning(
                "nesting conflict key=%s value=%s parents=%s chosen=%s",
                topology.levels[i].key,
                child,
                ",".join(sorted(counter)),
                best,
            )
        chosen[child] = best
    return chosen


def build_hypernodes(
    topology: Topology, positions: Sequence[NodePosition], options: HyperNodeOptions | None = None
) -> list[dict[str, Any]]:
    """Every HyperNode, tier 1 first, each tier sorted by name.

    Nodes without the narrowest label are left out; a domain whose parent is unknown (the
    wider label is missing on all its nodes) becomes a root at its tier.
    """
    opts = options or HyperNodeOptions()
    problems = prefix_problems(opts.prefix)
    if problems:
        raise InputError(f"--hypernode-prefix {opts.prefix!r} {problems[0]}")
    with_tier_name = opts.volcano_version >= TIER_NAME_SINCE
    labels = dict(MANAGED_BY)
    if opts.owner:
        labels[OWNER_LABEL] = opts.owner
    children = _domain_members(topology, positions)
    out: list[dict[str, Any]] = []
    names: dict[str, tuple[str, str]] = {}
    for tier, level in topology.hypernode_tiers():
        i = topology.index(level.key)
        tier_docs: list[dict[str, Any]] = []
        for value, members in children[i].items():
            name = hypernode_name(level, value, opts.prefix)
            other = names.setdefault(name, (level.key, value))
            if other != (level.key, value):
                raise InputError(
                    f"HyperNode name {name!r} stands for both {other[0]}={other[1]} and "
                    f"{level.key}={value}; rename a level in the profile or set "
                    "--hypernode-prefix"
                )
            spec: dict[str, Any] = {"tier": tier}
            if with_tier_name:
                spec["tierName"] = level.tier
            spec["members"] = _member_list(topology, i, value, members, opts)
            tier_docs.append(
                {
                    "apiVersion": API_VERSION,
                    "kind": "HyperNode",
                    "metadata": {
                        "name": name,
                        "labels": dict(labels),
                        "annotations": {LEVEL_ANNOTATION: f"{level.key}={value}"},
                    },
                    "spec": spec,
                }
            )
        tier_docs.sort(key=lambda d: d["metadata"]["name"])
        out += tier_docs
    return out


def _domain_members(
    topology: Topology, positions: Sequence[NodePosition]
) -> list[defaultdict[str, list[str]]]:
    """Per level index (widest = 0), each domain's members: nodes at the narrowest level,
    the values of the next narrower level above it."""
    last = len(topology.levels) - 1
    children: list[defaultdict[str, list[str]]] = [defaultdict(list) for _ in topology.levels]
    for p in positions:
        v = p.values[last]
        if v is not None:
            children[last][v].append(p.node)
    for i in range(last, 0, -1):
        for child, parent in choose_parents(topology, positions, i).items():
            children[i - 1][parent].append(child)
        # a wider domain seen only on nodes whose narrower label is missing has no members
    return children


def _member_list(
    topology: Topology, i: int, value: str, members: list[str], opts: HyperNodeOptions
) -> list[dict[str, Any]]:
    """``spec.members`` of the domain ``value`` at level index ``i``."""
    levels = topology.levels
    if i < len(levels) - 1:
        child_level = levels[i + 1]
        child_names = sorted({hypernode_name(child_level, c, opts.prefix) for c in members})
        return [{"type": _HYPERNODE, "selector": {"exactMatch": {"name": c}}} for c in child_names]
    if opts.node_members is NodeMembers.NAMES:
        return [node_member(n) for n in sorted(set(members))]
    match = {levels[i].key: value}
    if topology.tree_label and topology.name != DEFAULT_TREE:
        # a value may recur in another tree: select this tree's nodes only.
        # Not for "default": its nodes may lack the tree label altogether
        # (ascend-for-volcano counts them in), which matchLabels cannot say
        match[topology.tree_label] = topology.name
    return [{"type": _NODE, "selector": {"labelMatch": {"matchLabels": match}}}]


def outputs(target: Target, opts: HyperNodeOptions) -> list[Output]:
    """The HyperNodes of the target's positions; none without positions."""
    if target.positions is None:
        return []
    docs = build_hypernodes(target.topology, target.positions, opts)
    if not docs:
        return []
    title = f"Volcano HyperNodes ({len(docs)}): kubectl apply -f this file"
    return [Output(HYPERNODES_FILE, title, tuple(docs), applicable=True)]


EMITTER = Emitter(Kind.HYPERNODES, HyperNodeOptions(), outputs)
