"""``map``: the topology as one self-contained HTML page. Parsing, reading and writing
only; the model and the page are in ``labeler.topomap``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from labeler.base.errors import Exit
from labeler.commands._base import (
    add_command,
    add_profile,
    add_scope,
    add_source,
    node_scope,
    origin_of,
    profile_of,
    read_nodes,
)

if TYPE_CHECKING:
    from labeler.sim.common.cluster import Snapshot
    from labeler.topomap.model import TopologyMap


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(sub, common, "map", exits={Exit.OK: "the page was written"})
    add_profile(p)
    add_source(p, required=True, csv=True, snapshot=True, cluster_help="read nodes and pods live")
    add_scope(p, when="--from-cluster and --from-snapshot")
    p.add_argument(
        "-o",
        "--output",
        default="topology-map.html",
        metavar="FILE",
        help="the HTML file to write (default: %(default)s)",
    )
    p.add_argument("--title", default="", help="page title (default: 'Topology of PROFILE')")
    p.set_defaults(handler=run_map)


def run_map(args: argparse.Namespace) -> int:
    from labeler.core.states import NodeFacts
    from labeler.topomap.model import build_map, details_from_nodes, facts_from_nodes
    from labeler.topomap.render import write_html

    profile = profile_of(args)
    topology = profile.topology
    details = None
    snap: Snapshot | None = None  # a CSV has no capacity, no Workloads
    if args.from_csv:
        from labeler.core.positions import read_csv

        positions = read_csv(args.from_csv, topology)
        facts = [NodeFacts(position=p, foreign=(), accelerators=()) for p in positions.positions]
        scope = "every node of the CSV"
    else:
        from labeler.core.dra import device_counts
        from labeler.sim.kueue.usage import admitted_usage, with_held

        in_scope = node_scope(args)
        snap = read_nodes(args, kueue=True, kueue_optional=True)
        devices = device_counts(snap.slices, in_scope.dra_drivers)
        # free as domains and advise count it: less what admitted Workloads hold
        nodes = with_held(snap.nodes, admitted_usage(snap.workloads))
        facts = facts_from_nodes(topology, in_scope, nodes, devices)
        resources = {f.name: [r for r, _ in f.accelerators] for f in facts}
        details = details_from_nodes(nodes, resources)
        scope = in_scope.describe()
    topo = build_map(
        topology,
        facts,
        profile=profile.name,
        scope=scope,
        origin=origin_of(args),
        details=details,
        title=args.title,
    )
    topo = _with_hotswap(topo, snap) if snap is not None else topo
    path = write_html(args.output, topo)
    print(f"{path}: {_summary(topo)}")
    return Exit.OK


def _with_hotswap(topo: TopologyMap, snap: Snapshot) -> TopologyMap:
    """The map with the domains marked where one node failure would evict a Workload
    (judged on the nodes as read: the hot-swap view subtracts what Workloads hold itself)."""
    from labeler.sim.kueue.hotswap import hot_swap
    from labeler.topomap.risk import with_hotswap

    return with_hotswap(topo, hot_swap(snap.nodes, snap.kueue) if snap.workloads else None)


def _summary(topo: TopologyMap) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in topo.counts.items())
    return f"map of {len(topo.nodes)} node(s) ({counts}) in {len(topo.domains)} domain(s)"
