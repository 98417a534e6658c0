"""Profiles: a named topology plus what the agent writes and how it encodes IDs.

Built-in: ``oci-rdma``, ``ascend-superpod``, ``gce``, ``azure``, ``nvlink``,
``oci-rdma-nvlink`` and ``gce-nvlink`` (their keys are listed in docs/profiles.md). A level may
name its own ``source``: the agent then reads every source the profile needs each cycle.
A custom profile is a YAML file; ``--profile`` takes a built-in name or a path.

Sources report IDs by role (island, network block, superpod...), never by label key: the
profile alone says which label key each role is written to (``Profile.keys_for``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labeler.base.errors import InputError, UsageError
from labeler.base.files import read_text
from labeler.core.labels import key_problems, parse_encoding, value_problems
from labeler.core.model import Level, Topology

OCI_PREFIX = "oci.oraclecloud.com/"
OCI_HOST_ID = OCI_PREFIX + "rdma.host_id"
OCI_GPU_MEMORY_FABRIC = OCI_PREFIX + "host.gpu_memory_fabric_id"
# Also written by Oracle's oci-hpc-oke labeler on the same nodes (docs/compatibility.md).
OCI_GPU_MEMORY_CLUSTER = OCI_PREFIX + "host.gpu_memory_cluster_id"
OCI_RDMA_PLANES = OCI_PREFIX + "rdma.planes"
OCI_RDMA_IPV6 = OCI_PREFIX + "rdma.ipv6"
OCI_TRAY_INDEX = OCI_PREFIX + "host.tray_index"

ASCEND_TREE_LABEL = "huawei.com/topotree"
ASCEND_GROUP = "huawei.com/topotree.groupid"
ASCEND_SUPERPOD = "huawei.com/topotree.superpodid"
ASCEND_RACK = "huawei.com/topotree.rackid"
ASCEND_SERVER = "huawei.com/topotree.serverid"
DEFAULT_TREE_NAME = "default"
# The keys GKE writes on its nodes, so Kueue Topologies from GKE's documentation apply.
GCE_BLOCK = "cloud.google.com/gce-topology-block"
GCE_SUBBLOCK = "cloud.google.com/gce-topology-subblock"
GCE_HOST = "cloud.google.com/gce-topology-host"
# Azure's cloud-node-manager writes the interconnect group and (from the IMDS fields or the
# legacy tag) the subgroup under these keys, with the values the agent writes; it has no key
# for the placement group, so that one is ours (docs/compatibility.md).
AZURE_INTERCONNECT_GROUP = "topology.kubernetes.azure.com/interconnect-group"
AZURE_INTERCONNECT_SUBGROUP = "topology.kubernetes.azure.com/interconnect-subgroup"
AZURE_PLACEMENT_GROUP = "topology-labeler.io/azure-placement-group"
# NVIDIA's gpu-feature-discovery writes the NVLink clique under this key, the same value.
NVIDIA_CLIQUE = "nvidia.com/gpu.clique"


@dataclass(frozen=True)
class Roles:
    """The roles a topology source reports, as a profile maps them to label keys.

    ``levels``: roles a profile's levels can take, widest first; a level takes the role its
    ``name`` spells. ``extras``: the roles of the profile's extra labels, in their order.
    """

    levels: tuple[str, ...]
    extras: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """A topology and the rules for writing it.

    ``extra_keys`` are labels the profile writes that are not levels (host IDs, fabric IDs,
    the Ascend rack/server IDs). ``source`` names the agent's topology source.
    """

    name: str
    topology: Topology
    extra_keys: tuple[str, ...] = ()
    encoding: str = "hash"
    source: str = "static"

    @property
    def level_keys(self) -> tuple[str, ...]:
        return self.topology.keys

    @property
    def all_keys(self) -> tuple[str, ...]:
        """Every label key the profile may write: tree label, levels, extras."""
        tree = (self.topology.tree_label,) if self.topology.tree_label else ()
        return (*tree, *self.topology.keys, *self.extra_keys)

    def keys_for(self, roles: Roles) -> dict[str, str]:
        """Which label key each of a source's roles is written to; a role the profile does
        not write is absent. Raises a UsageError when the profile cannot take the source.

        Levels are matched by ``name``. When not every level name is a role and the profile
        has exactly as many levels as the source has level roles, they are taken by
        position, widest first (so a profile file can rename every key); a level whose name
        is no role is otherwise not the source's (the Ascend group ID is the planning
        sheet's). Extra labels take the extra roles in order; more than there are roles is
        an error.
        """
        levels = self.topology.levels
        names = [lv.name for lv in levels]
        # A level may also take an extra role by name (OCI's host as the narrowest level).
        takeable = (*roles.levels, *roles.extras)
        matched = [n for n in names if n in takeable]
        source = f"profile {self.name!r}: source {self.source}"
        if matched and (len(matched) == len(names) or len(names) != len(roles.levels)):
            keys = {lv.name: lv.key for lv in levels if lv.name in takeable}
        elif len(names) == len(roles.levels):
            keys = {role: lv.key for role, lv in zip(roles.levels, levels, strict=True)}
        else:
            raise UsageError(
                f"{source} needs levels named {', '.join(roles.levels)} (or exactly "
                f"{len(roles.levels)} levels, widest first); got {', '.join(names)}"
            )
        extras = [r for r in roles.extras if r not in keys]
        if len(self.extra_keys) > len(extras):
            raise UsageError(
                f"{source} writes at most {len(extras)} extra label(s) "
                f"({', '.join(extras) or 'none'}); got {', '.join(self.extra_keys)}"
            )
        keys.update(zip(extras, self.extra_keys, strict=False))
        return keys

    @property
    def sources(self) -> tuple[str, ...]:
        """Every source the profile's labels come from: its own, then the levels' own."""
        found = [self.source, *(lv.source for lv in self.topology.levels if lv.source)]
        return tuple(dict.fromkeys(found))

    def part(self, source: str) -> Profile:
        """The profile as one of its sources sees it: only the levels from ``source``
        (the extra labels and tree label belong to the profile's own source)."""
        levels = tuple(lv for lv in self.topology.levels if (lv.source or self.source) == source)
        own = source == self.source
        return Profile(
            name=f"{self.name}[{source}]",
            topology=Topology(
                name=self.topology.name,
                levels=levels,
                tree_label=self.topology.tree_label if own else None,
            ),
            extra_keys=self.extra_keys if own else (),
            encoding=self.encoding,
            source=source,
        )


def _on_default_tree(
    name: str, *levels: Level, extra_keys: tuple[str, ...] = (), encoding: str, source: str
) -> Profile:
    """A built-in profile whose one tree has the default name: every built-in but
    ascend-superpod, whose tree is named by the user."""
    return Profile(
        name=name,
        topology=Topology(name=DEFAULT_TREE_NAME, levels=levels),
        extra_keys=extra_keys,
        encoding=encoding,
        source=source,
    )


# The NVLink clique in a profile whose own source is another: nvidia-smi reads it, in the
# same cycle; the Slurm block level.
_CLIQUE_BY_NVIDIA_SMI = Level(NVIDIA_CLIQUE, "nvlink_clique", block=True, source="nvidia-smi")


def oci_rdma() -> Profile:
    return _on_default_tree(
        "oci-rdma",
        Level(OCI_PREFIX + "rdma.hpc_island_id", "hpc_island"),
        Level(OCI_PREFIX + "rdma.network_block_id", "network_block"),
        Level(OCI_PREFIX + "rdma.local_block_id", "local_block"),
        extra_keys=(
            OCI_HOST_ID,
            OCI_GPU_MEMORY_FABRIC,
            OCI_GPU_MEMORY_CLUSTER,
            OCI_RDMA_PLANES,
            OCI_RDMA_IPV6,
            OCI_TRAY_INDEX,
        ),
        encoding="hash",
        source="oci-imds",
    )


def ascend_superpod(tree_name: str = DEFAULT_TREE_NAME) -> Profile:
    return Profile(
        name="ascend-superpod",
        topology=Topology(
            name=tree_name,
            tree_label=ASCEND_TREE_LABEL,
            levels=(Level(ASCEND_GROUP, "group"), Level(ASCEND_SUPERPOD, "superpod")),
        ),
        extra_keys=(ASCEND_RACK, ASCEND_SERVER),
        encoding="raw",
        source="ascend",
    )


def gce() -> Profile:
    """GKE's own keys and values: the metadata server's IDs as they are (GKE writes them
    unencoded), block, sub-block and host as Kueue levels."""
    return _on_default_tree(
        "gce",
        Level(GCE_BLOCK, "block"),
        Level(GCE_SUBBLOCK, "subblock"),
        Level(GCE_HOST, "host"),
        encoding="raw",
        source="gce-metadata",
    )


def azure() -> Profile:
    """The interconnect group and subgroup as levels, under cloud-node-manager's keys and
    raw as it writes them (GUIDs are valid label values), so the agent claims its equal
    values; the placement group as an extra label."""
    return _on_default_tree(
        "azure",
        Level(AZURE_INTERCONNECT_GROUP, "interconnect_group"),
        Level(AZURE_INTERCONNECT_SUBGROUP, "interconnect_subgroup"),
        extra_keys=(AZURE_PLACEMENT_GROUP,),
        encoding="raw",
        source="azure-imds",
    )


def nvlink() -> Profile:
    """The NVLink clique alone, GFD's key and value; the Slurm block level."""
    return _on_default_tree(
        "nvlink",
        Level(NVIDIA_CLIQUE, "nvlink_clique", block=True),
        encoding="raw",
        source="nvidia-smi",
    )


def oci_rdma_nvlink() -> Profile:
    """OCI's three RDMA levels, then the NVLink clique (GB200/GB300 racks) as the Slurm
    block level, then the host: IMDS and nvidia-smi read in the same cycle."""
    base = oci_rdma()
    host, *extras = base.extra_keys
    return _on_default_tree(
        "oci-rdma-nvlink",
        *base.topology.levels,
        _CLIQUE_BY_NVIDIA_SMI,
        Level(host, "host"),
        extra_keys=tuple(extras),
        encoding="hash",
        source="oci-imds",
    )


def gce_nvlink() -> Profile:
    """GKE's block and sub-block, the NVLink clique as the Slurm block level, then GKE's
    host."""
    block, subblock, host = gce().topology.levels
    return _on_default_tree(
        "gce-nvlink",
        block,
        subblock,
        _CLIQUE_BY_NVIDIA_SMI,
        host,
        encoding="raw",
        source="gce-metadata",
    )


BUILTIN = {
    "oci-rdma": oci_rdma,
    "ascend-superpod": ascend_superpod,
    "gce": gce,
    "azure": azure,
    "nvlink": nvlink,
    "oci-rdma-nvlink": oci_rdma_nvlink,
    "gce-nvlink": gce_nvlink,
}


def check_tree_name(name: str, tree_label: str = ASCEND_TREE_LABEL) -> str:
    """A tree name is a label value, and never empty (ascend-for-volcano rejects '')."""
    if not name:
        raise UsageError(
            f"--topotree-name must not be empty: ascend-for-volcano rejects an empty "
            f"{tree_label}; leave the flag out for {DEFAULT_TREE_NAME!r}"
        )
    problems = value_problems(name)
    if problems:
        raise UsageError(
            f"--topotree-name {name!r} is not a valid value for {tree_label}: "
            + "; ".join(problems)
        )
    return name


# A profile is a few hundred bytes; the cap only stops a wrong path early.
MAX_PROFILE_BYTES = 1 << 20
# Kueue's Topology takes at most 16 levels, and kubernetes.io/hostname is always the last.
MAX_LEVELS = 15

_TOP_KEYS = {"name", "treeName", "treeLabel", "levels", "extraLabels", "encoding", "source"}
_LEVEL_KEYS = {"key", "name", "reservedNode", "tierName", "block", "source"}
_SOURCES = {"static", "oci-imds", "ascend", "gce-metadata", "azure-imds", "nvidia-smi"}


def load_profile(spec: str, *, tree_name: str | None = None) -> Profile:
    """A built-in profile by name, or a profile file by path."""
    if spec in BUILTIN:
        if tree_name is not None and spec == "ascend-superpod":
            check_tree_name(tree_name)
        if spec == "ascend-superpod":
            return ascend_superpod(tree_name or DEFAULT_TREE_NAME)
        return BUILTIN[spec]()
    path = Path(spec)
    if not path.is_file():
        raise InputError(
            f"--profile {spec!r} is neither a built-in profile ({', '.join(BUILTIN)}) "
            "nor a readable file"
        )
    text = read_text(path, MAX_PROFILE_BYTES, what="profile")
    # Imported only for profile files: every command line builds the built-in names.
    from labeler.base import yamlsafe

    doc = yamlsafe.load(text, str(path), hint="the profile is not valid YAML")
    profile = parse_profile(doc, origin=str(path), tree_name=tree_name)
    if tree_name is not None and profile.topology.tree_label:
        check_tree_name(tree_name, profile.topology.tree_label)
    return profile


def parse_profile(doc: Any, *, origin: str, tree_name: str | None = None) -> Profile:
    """Validate a profile document, reporting every problem at once."""
    if not isinstance(doc, Mapping):
        raise InputError(f"{origin}: a profile must be a YAML mapping with name and levels")
    problems: list[str] = []
    for k in sorted(map(str, set(doc) - _TOP_KEYS)):
        problems.append(f"unknown field {k!r} (known: {', '.join(sorted(_TOP_KEYS))})")
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        problems.append("'name' must be a non-empty string")
    levels = _parse_levels(doc.get("levels"), problems)
    tree_label = doc.get("treeLabel")
    if tree_label is not None:
        problems += _key_problems("treeLabel", tree_label)
    extra = doc.get("extraLabels", [])
    if not isinstance(extra, list):
        problems.append("'extraLabels' must be a list of label keys")
        extra = []
    for i, key in enumerate(extra):
        problems += _key_problems(f"extraLabels[{i}]", key)
    encoding = doc.get("encoding", "hash")
    if not isinstance(encoding, str):
        problems.append(f"'encoding' must be a string, got {encoding!r}")
    else:
        try:
            parse_encoding(encoding)
        except InputError as e:
            problems.append(f"encoding: {e}")
    source = doc.get("source", "static")
    if not isinstance(source, str) or source not in _SOURCES:
        problems.append(f"source {source!r} is not one of {', '.join(sorted(_SOURCES))}")
    if levels and all(lv.source not in (None, source) for lv in levels):
        problems.append(f"no level comes from the profile's own source {source!r}")
    tree = tree_name or doc.get("treeName") or DEFAULT_TREE_NAME
    if tree_name is None and "treeName" in doc:
        why = value_problems(tree) if isinstance(tree, str) else ["must be a string"]
        if why:
            problems.append(f"treeName {tree!r} is not a valid label value: {'; '.join(why)}")
    topology: Topology | None = None
    if not problems:
        try:
            topology = Topology(name=str(tree), levels=tuple(levels), tree_label=tree_label)
        except ValueError as e:
            problems.append(str(e))
    if problems or topology is None:
        raise InputError(problems, heading=f"{origin}: invalid profile:")
    return Profile(
        name=str(name),
        topology=topology,
        extra_keys=tuple(extra),
        encoding=str(encoding),
        source=str(source),
    )


def _key_problems(where: str, key: Any) -> list[str]:
    if not isinstance(key, str):
        return [f"{where}: label key must be a string, got {key!r}"]
    return [f"{where}: label key {key!r}: {p}" for p in key_problems(key)]


def _parse_levels(raw: Any, problems: list[str]) -> list[Level]:
    if not isinstance(raw, list) or not raw:
        problems.append("'levels' must be a non-empty list, widest level first")
        return []
    if len(raw) > MAX_LEVELS:  # before anything is built from them
        problems.append(
            f"'levels' has {len(raw)} levels; Kueue's Topology takes at most {MAX_LEVELS} "
            "besides kubernetes.io/hostname"
        )
        return []
    levels = []
    for i, item in enumerate(raw):
        where = f"levels[{i}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where}: must be a mapping with 'key' and 'name'")
            continue
        for k in sorted(map(str, set(item) - _LEVEL_KEYS)):
            problems.append(
                f"{where}: unknown field {k!r} (known: {', '.join(sorted(_LEVEL_KEYS))})"
            )
        key = item.get("key")
        problems += _key_problems(f"{where}.key", key)
        name = item.get("name", key.rsplit("/", 1)[-1] if isinstance(key, str) else None)
        if not isinstance(name, str) or not name:
            problems.append(f"{where}: 'name' must be a non-empty string")
        reserved = item.get("reservedNode")
        # bool is an int in Python, but JSON true in resource-level-config makes
        # ascend-for-volcano's json.Unmarshal fail, and it then drops every tree
        if reserved is not None and (
            isinstance(reserved, bool) or not isinstance(reserved, int) or reserved < 0
        ):
            problems.append(
                f"{where}: reservedNode must be a whole number ≥ 0, got {reserved!r} "
                "(ascend-for-volcano reads it as a JSON integer)"
            )
        if reserved is not None and i != len(raw) - 1:
            problems.append(
                f"{where}: reservedNode is honoured only on the narrowest level (the last one)"
            )
        tier = item.get("tierName")
        if tier is not None and not isinstance(tier, str):
            problems.append(f"{where}: tierName must be a string")
        block = item.get("block", False)
        if not isinstance(block, bool):
            problems.append(f"{where}: block must be true or false (the Slurm block level)")
        source = item.get("source")
        if source is not None and source not in _SOURCES:
            problems.append(
                f"{where}: source {source!r} is not one of {', '.join(sorted(_SOURCES))}"
            )
        if isinstance(key, str) and isinstance(name, str):
            levels.append(
                Level(
                    key=key,
                    name=name,
                    reserved_node=reserved,
                    tier_name=tier,
                    block=block is True,
                    source=source if isinstance(source, str) else None,
                )
            )
    return levels
