"""Per-domain inventory: nodes, pod slots on an empty cluster, free slots now, and how many
jobs of N pods each domain could take now as a required request at its level.

The counts come from the same phase-1 pass the simulator uses (``fill_counts``), so
"3 jobs fit in block b1" here and "fits in b1" from ``advise`` can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from labeler.sim.kueue.assign import SliceLayer, fill_counts
from labeler.sim.kueue.tree import Capacity, Domain, Tree


@dataclass(frozen=True)
class DomainInfo:
    values: tuple[str, ...]
    nodes: tuple[str, ...]
    total: int
    free: int
    jobs: int | None  # None when no --pods was given or the level is below the slice level

    @property
    def value(self) -> str:
        return self.values[-1]


@dataclass(frozen=True)
class LevelInfo:
    level: int
    key: str
    domains: tuple[DomainInfo, ...]


def _counts(
    tree: Tree, capacity: Capacity, layer: SliceLayer | None
) -> dict[tuple[str, ...], tuple[int, int]]:
    size, level = (layer.size, layer.level) if layer else (1, tree.depth - 1)
    fill_counts(tree, capacity, size, level, {})
    return {d.values: (d.pods, d.slices) for lvl in tree.levels for d in lvl}


def _node_names(dom: Domain) -> list[str]:
    if dom.node is not None:
        return [dom.node.name]
    out: list[str] = []
    stack = [dom]
    while stack:
        d = stack.pop()
        if d.node is not None:
            out.append(d.node.name)
        else:
            stack.extend(d.children)
    return sorted(out)


def inventory(
    tree: Tree,
    now: Capacity,
    empty: Capacity,
    *,
    pods: int | None = None,
    slice_layer: SliceLayer | None = None,
    include_nodes: bool = False,
) -> list[LevelInfo]:
    """One entry per level (the hostname level only with ``include_nodes``), domains sorted
    by their values."""
    free = _counts(tree, now, slice_layer)
    total = _counts(tree, empty, slice_layer)
    size = slice_layer.size if slice_layer else 1
    slice_level = slice_layer.level if slice_layer else tree.depth - 1
    per_job = pods // size if pods else 0
    levels: list[LevelInfo] = []
    last = tree.depth if include_nodes else tree.depth - 1
    for lvl in range(last):
        infos = []
        for dom in sorted(tree.levels[lvl], key=lambda d: d.values):
            f_pods, f_slices = free[dom.values]
            jobs = f_slices // per_job if per_job and lvl <= slice_level else None
            infos.append(
                DomainInfo(
                    values=dom.values,
                    nodes=tuple(_node_names(dom)),
                    total=total[dom.values][0],
                    free=f_pods,
                    jobs=jobs,
                )
            )
        levels.append(LevelInfo(level=lvl, key=tree.keys[lvl], domains=tuple(infos)))
    return levels
