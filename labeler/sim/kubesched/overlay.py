"""``advise --html`` for PodGroups: kube-scheduler's answer drawn over the topology map.

The pods per node are the pods it would bind; the highlighted domain is the first
hierarchy's chosen domain when its topology key is one of the profile's levels. Nodes
that take none of the first pending pod say why (the filters' reasons), and nodes
without the topology key are in no placement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from labeler.core.capacity import Node
from labeler.core.model import Topology
from labeler.core.overlay import JobOverlay
from labeler.sim.kubesched.filters import reasons
from labeler.sim.kubesched.schedule import Advice


def _path(
    topology: Topology, key: str | None, value: str | None, nodes: Sequence[Node]
) -> tuple[str, ...] | None:
    """The map path (widest first) of the domain ``key=value``, when ``key`` is a level."""
    if key is None or value is None or key not in topology.keys:
        return None
    depth = topology.keys.index(key) + 1
    for n in nodes:
        if n.labels.get(key) == value:
            path = tuple(n.labels.get(k) for k in topology.keys[:depth])
            if all(v is not None for v in path):
                return tuple(str(v) for v in path)
    return None


def podgroup_overlay(topology: Topology, nodes: Sequence[Node], advice: Advice) -> JobOverlay:
    pods = Counter(p.node for p in advice.pods if p.node)
    first = advice.results[0] if advice.results else None
    key = first.group.key if first is not None else None
    blocked: dict[str, str] = {}
    probe = next((p.pod for p in advice.pods), None)
    for n in nodes:
        if key is not None and key not in n.labels:
            blocked[n.name] = f"outside the topology: no label {key} (in no placement)"
        elif probe is not None and n.name not in pods:
            why = reasons(n, n.free(), probe)
            if why:
                blocked[n.name] = ", ".join(why)
    total = len(advice.pods)
    if advice.fits:
        where = f" in {key}={first.domain}" if first is not None and first.domain else ""
        headline = f"FITS now: kube-scheduler binds {total} pod(s){where}"
    else:
        bound = sum(pods.values())
        headline = f"does NOT fit now: {bound} of {total} pod(s) would be bound"
    domain = _path(topology, key, first.domain if first is not None else None, nodes)
    return JobOverlay(
        scheduler="kube-scheduler",
        fits=advice.fits,
        headline=headline,
        message=advice.message,
        pods=dict(pods),
        domain=domain,
        domain_role="placement" if advice.fits else "best",
        blocked=blocked,
        notes=tuple(f"{n} node(s) {why}" for why, n in sorted(Counter(blocked.values()).items())),
    )
