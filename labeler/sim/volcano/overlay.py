"""``advise --html`` for Volcano: the placement drawn over the map of a profile's levels,
or, without a profile, of the HyperNode tiers (``tier_profile``).

The pods per node are the pods Volcano would bind; the highlighted domain is the chosen
HyperNode (or, when the gang does not fit, the best HyperNode of the narrowest tier that
would hold it now), drawn as the deepest level all its nodes share. Each other node says
why it takes no pod of the gang's first pending task: its filters, full, or outside the
HyperNodes a hard bound allows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from labeler.core.capacity import Node
from labeler.core.model import Level, Topology, level_values
from labeler.core.overlay import JobOverlay
from labeler.core.profiles import Profile
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.advice import Advice
from labeler.sim.volcano.cycle import Cycle
from labeler.sim.volcano.hypernodes import TOP, HyperNodeTree, tier_name_of
from labeler.sim.volcano.model import PENDING

TIER_KEY = "hypernode.volcano.sh/tier-{}"  # a map level per tier; never written to a node


def tier_profile(tree: HyperNodeTree, nodes: Sequence[Node]) -> tuple[Profile, list[Node]] | None:
    """The map's levels from the HyperNodes, widest tier first, and the nodes labelled
    with the HyperNode holding them at each tier (None without HyperNodes)."""
    tiers = sorted({h.tier for h in tree.real}, reverse=True)
    if not tiers:
        return None
    levels = []
    for t in tiers:
        name = tier_name_of(tree, t)
        levels.append(Level(TIER_KEY.format(t), f"tier {t}" + (f" ({name})" if name else "")))
    holder: dict[str, dict[str, str]] = {}
    for h in tree.real:
        for n in h.nodes:
            holder.setdefault(n, {})[TIER_KEY.format(h.tier)] = h.name
    out = [replace(n, labels={**n.labels, **holder.get(n.name, {})}) for n in nodes]
    return Profile("HyperNodes", Topology("hypernodes", tuple(levels))), out


def _domain(topology: Topology, nodes: Sequence[Node]) -> tuple[str, ...] | None:
    """The longest path of level values (widest first) every node shares."""
    paths = [level_values(topology.keys, n.labels) for n in nodes]
    if not paths:
        return None
    common: list[str] = []
    for i in range(len(topology.keys)):
        values = {p[i] for p in paths}
        if len(values) != 1 or None in values:
            break
        common.append(str(next(iter(values))))
    return tuple(common) or None


def _blocked(advice: Advice, nodes: Sequence[Node], used: set[str]) -> dict[str, str]:
    task = next((t for t in advice.gang.tasks if t.status == PENDING), None)
    if task is None:
        return {}
    static = Cycle(advice.conf, advice.tree, {}, scores=False).static
    nt = advice.podgroup.network_topology
    bound = nt.highest_tier if nt is not None else None
    allowed: set[str] | None = None
    if bound is not None and bound < advice.tree.top_tier():
        allowed = set().union(*(h.nodes for h in advice.tree.real if h.tier <= bound))
    out = {}
    for n in nodes:
        if n.name in used:
            continue
        why = static.reason(task, n)
        if why is None and R.insufficient(task.requests, n.free()):
            why = f"full: Insufficient {R.insufficient(task.requests, n.free())[0]}"
        if why is None and allowed is not None and n.name not in allowed:
            why = f"outside every HyperNode of tier ≤ {bound}"
        if why is not None:
            out[n.name] = why
    return out


def volcano_overlay(topology: Topology, advice: Advice, nodes: Sequence[Node]) -> JobOverlay:
    v = advice.verdict
    by_name = {n.name: n for n in nodes}
    pods = Counter(p.node for p in v.binds)
    if advice.fits:
        hn, role = v.hypernode, "placement"
        where = f"within HyperNode {hn} (tier {v.tier})" if hn else "across the cluster"
        headline = f"FITS now (Volcano): {len(v.binds)} pod(s) {where}"
    else:
        row = advice.smallest_now()
        hn = row.best_now if row is not None and row.best_now != TOP else ""
        role = "best"
        headline = "does NOT fit now (Volcano)" + (
            f"; HyperNode {hn} (tier {row.tier}) would hold it" if hn and row else ""
        )
    members = [by_name[n] for n in sorted(advice.tree[hn].nodes) if n in by_name] if hn else []
    blocked = _blocked(advice, nodes, set(pods))
    kinds = Counter(why.split(":")[0] for why in blocked.values())
    return JobOverlay(
        scheduler="Volcano",
        fits=advice.fits,
        headline=headline,
        message="" if advice.fits else v.message,
        pods=dict(pods),
        domain=_domain(topology, members),
        domain_role=role,
        blocked=blocked,
        notes=tuple(f"{n} node(s): {k}" for k, n in sorted(kinds.items())),
    )
