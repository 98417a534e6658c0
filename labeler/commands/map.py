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
    cluster,
    node_scope,
    origin_of,
    profile_of,
    read_nodes,
)

if TYPE_CHECKING:
    from labeler.tas.cluster import Snapshot
    from labeler.topomap.model import TopologyMap


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub,
        common,
        "map",
        exits={Exit.OK: "the page was written"},
    )
    add_profile(p)
    add_source(p, required=True, csv=True, snapshot=True, cluster_help="read nodes and pods live")
    add_scope(p, when="--from-cluster and --from-snapshot")
    p.add_argument(
        "-o",
        "--output",
        default="topology-map.html",
        metavar="FILE",
        help="the HTML file to write (default: topology-map.html)",
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

        in_scope = node_scope(args)
        snap = read_nodes(args)
        devices = device_counts(snap.slices, in_scope.dra_drivers)
        facts = facts_from_nodes(topology, in_scope, snap.nodes, devices)
        resources = {f.name: [r for r, _ in f.accelerators] for f in facts}
        details = details_from_nodes(snap.nodes, resources)
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
    topo = _with_hotswap(args, topo, snap) if snap is not None else topo
    path = write_html(args.output, topo)
    print(f"{path}: {_summary(topo)}")
    return Exit.OK


def _with_hotswap(args: argparse.Namespace, topo: TopologyMap, snap: Snapshot) -> TopologyMap:
    """The map with the domains marked where one node failure would evict a Workload."""
    from labeler.topomap.risk import with_hotswap

    if args.from_cluster:  # Kueue's objects and the pods, as audit reads them
        from labeler.commands.audit import read_hot_swap
        from labeler.kube.nodes import list_nodes
        from labeler.tas.gates import parse_gates

        api = cluster(args)
        return with_hotswap(topo, read_hot_swap(api, list_nodes(api)[0], parse_gates(None)))
    from labeler.tas.hotswap import hot_swap

    return with_hotswap(topo, hot_swap(snap.nodes, snap.kueue) if snap.workloads else None)


def _summary(topo: TopologyMap) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in topo.counts.items())
    return f"map of {len(topo.nodes)} node(s) ({counts}) in {len(topo.domains)} domain(s)"
