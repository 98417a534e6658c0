"""The topology model: a tree of levels, widest first, and where each node sits in it.

Every consumer wants the levels in its own order (docs/architecture.md, "Level orders").
The conversions live here, and only here, so that Kueue, Volcano and the HyperNodes can
never disagree about which label is the narrowest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

HOSTNAME_LABEL = "kubernetes.io/hostname"

# Values other labelers write when they know nothing: never a topology value, so a level
# label holding one counts as missing (oci-hpc-oke writes "no-imds-data" when IMDS has no
# answer). Kueue would otherwise group every such node into one false domain.
PLACEHOLDERS = frozenset({"no-imds-data"})


def level_values(keys: Sequence[str], labels: Mapping[str, str]) -> tuple[str | None, ...]:
    """One value per level key; None where the label is missing or a placeholder."""
    return tuple(None if (v := labels.get(k)) in PLACEHOLDERS else v for k in keys)


@dataclass(frozen=True)
class Level:
    """One level of the tree: a label key whose value names a domain."""

    key: str
    name: str
    reserved_node: int | None = None  # ascend-for-volcano honours it on level1 only
    tier_name: str | None = None  # Volcano HyperNode spec.tierName; defaults to the key
    block: bool = False  # Slurm topology/block: this level's domains are the blocks
    source: str | None = None  # the agent source it comes from; None: the profile's source

    @property
    def tier(self) -> str:
        """The HyperNode ``tierName``: the label key unless the profile says otherwise.

        Volcano's label discovery (1.14+) names each tier after its label key, so with the
        key a job's ``highestTierName`` means the same tier on static and discovered
        HyperNodes alike.
        """
        return self.tier_name or self.key


@dataclass(frozen=True)
class Topology:
    """A tree name, an optional tree label, and the levels ordered widest → narrowest."""

    name: str
    levels: tuple[Level, ...]
    tree_label: str | None = None

    def __post_init__(self) -> None:
        if not self.levels:
            raise ValueError(f"topology {self.name!r} has no levels")
        keys = [lv.key for lv in self.levels]
        if len(set(keys)) != len(keys):
            raise ValueError(f"topology {self.name!r} repeats a level key: {keys}")
        names = [lv.name for lv in self.levels]
        if len(set(names)) != len(names):
            raise ValueError(f"topology {self.name!r} repeats a level name: {names}")
        if sum(lv.block for lv in self.levels) > 1:
            raise ValueError(f"topology {self.name!r}: only one level can be the Slurm block level")
        if HOSTNAME_LABEL in keys:
            raise ValueError(
                f"topology {self.name!r}: {HOSTNAME_LABEL} is added as the last level "
                "automatically; do not list it"
            )

    @property
    def keys(self) -> tuple[str, ...]:
        """Level label keys, widest first."""
        return tuple(lv.key for lv in self.levels)

    @property
    def block_level(self) -> Level | None:
        """The level whose domains are Slurm's blocks (topology/block), if one is marked."""
        return next((lv for lv in self.levels if lv.block), None)

    def level(self, key_or_name: str) -> Level:
        """Find a level by its label key or its short name."""
        for lv in self.levels:
            if key_or_name in (lv.key, lv.name):
                return lv
        known = ", ".join(f"{lv.name} ({lv.key})" for lv in self.levels)
        raise KeyError(f"no level {key_or_name!r}; the levels are: {known}")

    def index(self, key_or_name: str) -> int:
        """Position of a level, 0 = widest."""
        return self.levels.index(self.level(key_or_name))

    # --- the four level orders (docs/architecture.md) ---------------------------------

    def kueue_levels(self) -> list[str]:
        """Kueue Topology.spec.levels: widest → narrowest, then the hostname."""
        return [*self.keys, HOSTNAME_LABEL]

    def volcano_levels(self) -> dict[str, Level]:
        """ascend-for-volcano resource-level-config: level1 = narrowest, keys continuous."""
        return {f"level{i}": lv for i, lv in enumerate(reversed(self.levels), start=1)}

    def hypernode_tiers(self) -> list[tuple[int, Level]]:
        """Volcano HyperNode tiers: tier 1 = narrowest (members are Nodes)."""
        return [(i, lv) for i, lv in enumerate(reversed(self.levels), start=1)]

    def discovery_levels(self) -> list[str]:
        """Volcano label discovery: widest → narrowest, then the hostname (dropped by Volcano)."""
        return [*self.keys, HOSTNAME_LABEL]


@dataclass(frozen=True)
class NodePosition:
    """Where one node sits: one value per level (widest first; None = label missing)."""

    node: str
    values: tuple[str | None, ...]
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_labels(cls, topology: Topology, node: str, labels: Mapping[str, str]) -> NodePosition:
        values = level_values(topology.keys, labels)
        extra = {k: v for k, v in labels.items() if k not in topology.keys}
        return cls(node=node, values=values, extra=extra)

    @property
    def complete(self) -> bool:
        return all(v is not None for v in self.values)

    def missing(self, topology: Topology) -> list[Level]:
        return [lv for lv, v in zip(topology.levels, self.values, strict=True) if v is None]

    def labels(self, topology: Topology) -> dict[str, str]:
        """The node labels this position stands for (levels present, then extras)."""
        out = {k: v for k, v in zip(topology.keys, self.values, strict=True) if v is not None}
        out.update(self.extra)
        return out
