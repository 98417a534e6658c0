"""``advise --html``: the map of the simulated nodes with a placement drawn over it.

The overlay is the simulator's (``JobOverlay``); this module only chooses what the map
shows of the nodes: the audit's scope (accelerator nodes) plus any extended resource the
pods request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from labeler.core.capacity import Node
from labeler.core.dra import Devices
from labeler.core.overlay import JobOverlay
from labeler.core.profiles import Profile
from labeler.core.scope import DEFAULT_RESOURCES, Scope
from labeler.topomap.model import TopologyMap, build_map, details_from_nodes, facts_from_nodes


def advice_map(
    profile: Profile,
    nodes: Iterable[Node],
    requests: Mapping[str, int],
    job: JobOverlay,
    *,
    origin: str,
    title: str,
    devices: Mapping[str, Devices] | None = None,
) -> TopologyMap:
    """The map of ``nodes`` with ``job`` drawn over it; ``requests`` are one pod's;
    ``devices``: node → its DRA devices (they put the node on the map, not in the job)."""
    nodes = list(nodes)
    topology = profile.topology
    extended = tuple(r for r in sorted(requests) if "/" in r)
    drivers = tuple(sorted({d for found in (devices or {}).values() for d, _ in found}))
    scope = Scope(
        resources=tuple(dict.fromkeys((*DEFAULT_RESOURCES, *extended))), dra_drivers=drivers
    )
    facts = facts_from_nodes(topology, scope, nodes, devices)
    resources = {f.name: [r for r, _ in f.accelerators] for f in facts}
    return build_map(
        topology,
        facts,
        profile=profile.name,
        scope=scope.describe(),
        origin=origin,
        details=details_from_nodes(nodes, resources),
        job=job,
        title=title,
    )
