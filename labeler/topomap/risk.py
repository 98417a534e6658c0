"""The hot-swap view on the map: the domains where one node failure would evict a Workload.

For each Workload that one failure would evict, each node whose failure has no replacement
marks the domain Kueue would have searched (the node's ancestor at that depth; its own
narrowest domain when Kueue searches the whole flavor), with the Workloads named. The map
counts a domain by the audit profile's levels; where the flavor's Topology has the same
levels (the usual case) the marked domain is exactly Kueue's.
"""

from __future__ import annotations

from dataclasses import replace

from labeler.core.hotswap import HotSwapView
from labeler.topomap.model import TopologyMap


def with_hotswap(topo: TopologyMap, view: HotSwapView | None) -> TopologyMap:
    if view is None or not view.at_risk:
        return topo
    where = {n.name: n.domain for n in topo.nodes if n.domain >= 0}
    found: dict[int, dict[str, list[str]]] = {}
    for w in view.at_risk:
        for spare in w.nodes:
            d = where.get(spare.node)
            if spare.replaceable or d is None:
                continue
            while spare.domain and topo.domains[d].level + 1 > len(spare.domain):
                d = topo.domains[d].parent
            found.setdefault(d, {}).setdefault(w.key, []).append(spare.node)
    marks = {
        d: "no spare node if one fails: "
        + "; ".join(f"{key} ({', '.join(nodes)})" for key, nodes in sorted(names.items()))
        for d, names in found.items()
    }
    return replace(topo, marks=marks)
