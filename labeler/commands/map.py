"""``map``: the topology as one self-contained HTML page. Parsing, reading and writing
only; the model and the page are in ``labeler.topomap``."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any

from labeler.base.errors import Exit
from labeler.commands._base import (
    add_command,
    add_profile,
    add_scope,
    add_source,
    cluster,
    node_scope,
)
from labeler.core.profiles import load_profile

if TYPE_CHECKING:
    from labeler.topomap.model import TopologyMap

log = logging.getLogger(__name__)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub,
        common,
        "map",
        "draw the topology as one self-contained HTML page: nested domains, node states, "
        "free accelerators, nodes outside the topology",
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

    profile = load_profile(args.profile, tree_name=args.topotree_name)
    topology = profile.topology
    if args.from_csv:
        from labeler.core.positions import read_csv

        positions = read_csv(args.from_csv, topology)
        facts = [NodeFacts(position=p, foreign=(), accelerators=()) for p in positions.positions]
        topo = build_map(
            topology,
            facts,
            profile=profile.name,
            scope="every node of the CSV",
            origin=args.from_csv,
            title=args.title,
        )
    else:
        from labeler.core.dra import device_counts
        from labeler.tas.inputs import read_cluster, read_snapshot

        scope = node_scope(args)
        snap = (
            read_cluster(cluster(args), dra_drivers=scope.dra_drivers)
            if args.from_cluster
            else read_snapshot(args.from_snapshot)
        )
        devices = device_counts(snap.slices, scope.dra_drivers)
        facts = facts_from_nodes(topology, scope, snap.nodes, devices)
        resources = {f.name: [r for r, _ in f.accelerators] for f in facts}
        topo = build_map(
            topology,
            facts,
            profile=profile.name,
            scope=scope.describe(),
            origin="the cluster" if args.from_cluster else args.from_snapshot,
            details=details_from_nodes(snap.nodes, resources),
            title=args.title,
        )
    path = write_html(args.output, topo)
    print(f"{path}: {_summary(topo)}")
    return Exit.OK


def _summary(topo: TopologyMap) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in topo.counts.items())
    return f"map of {len(topo.nodes)} node(s) ({counts}) in {len(topo.domains)} domain(s)"
