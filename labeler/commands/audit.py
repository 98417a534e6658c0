"""``audit`` and ``placement``: nodes the schedulers cannot see, and where a job landed
Parsing and printing only; the logic is in ``labeler.audit``."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from labeler.audit.options import ExporterOptions
from labeler.base.errors import Exit, UsageError
from labeler.base.flags import positive_number
from labeler.base.logs import logger
from labeler.commands._base import (
    add_command,
    add_profile,
    add_report_format,
    add_scope,
    cluster,
    cluster_devices,
    node_scope,
    profile_of,
)
from labeler.commands.advise.kueue_flags import add_gates_option, kueue_gates

if TYPE_CHECKING:
    from labeler.core.capacity import Node
    from labeler.core.hotswap import HotSwapView
    from labeler.core.node import NodeInfo
    from labeler.core.profiles import Profile
    from labeler.core.scope import Scope
    from labeler.core.states import NodeFacts
    from labeler.sim.kueue.gates import Gates

log = logger(__name__)


_AUDIT_EXITS = {
    Exit.OK: "every node in scope is fully labeled (with --serve: stopped by a signal)",
    Exit.INCOMPLETE: "audited: some node in scope is not fully labeled, or no node "
    "is in scope (a mistyped --node-selector)",
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(sub, common, "audit", exits=_AUDIT_EXITS)
    add_profile(p)
    add_scope(p)
    add_report_format(p, "table")
    g = p.add_argument_group("exporter (--serve)")
    g.add_argument(
        "--serve",
        action="store_true",
        help="watch nodes and serve /metrics and the map at /topology",
    )
    g.add_argument(
        "--port", type=int, default=8080, help="port for /metrics, /healthz, /readyz, /topology"
    )
    g.add_argument("--bind", default="0.0.0.0", help="address to listen on (default %(default)s)")
    g.add_argument(
        "--watch-timeout",
        type=int,
        default=ExporterOptions.watch_timeout,
        help="seconds before each WATCH request is renewed (default %(default)s)",
    )
    g.add_argument(
        "--stale-after",
        type=positive_number,
        default=ExporterOptions.stale_after,
        metavar="SECONDS",
        help="/readyz answers 503 while the node watch has been down longer than this: the "
        "figures are stale (default %(default)g)",
    )
    g.add_argument(
        "--debounce", type=float, default=ExporterOptions.debounce, help=argparse.SUPPRESS
    )
    h = p.add_argument_group("hot swap (Kueue)")
    h.add_argument(
        "--no-hotswap",
        action="store_true",
        help="skip the hot-swap view (by default, where Kueue is installed: for every "
        "admitted TAS Workload, could Kueue replace each of its nodes if it failed now)",
    )
    add_gates_option(h)
    h.add_argument(
        "--hotswap-interval",
        type=float,
        default=ExporterOptions.hotswap_interval,
        help="exporter: at most one recomputation of the hot-swap view per this many "
        "seconds (default %(default)g)",
    )
    p.set_defaults(handler=run_audit)

    q = add_command(
        sub,
        common,
        "placement",
        exits={Exit.OK: "the placement was printed (also when no pod matched)"},
    )
    q.add_argument("-l", "--selector", required=True, help="pod label selector, e.g. job-name=X")
    q.add_argument("-n", "--namespace", help="namespace (default: all namespaces)")
    add_profile(q, default="oci-rdma")
    add_report_format(q, "table")
    q.set_defaults(handler=run_placement)


def run_audit(args: argparse.Namespace) -> int:
    from labeler.audit.render import render_table
    from labeler.core.states import build_report, node_facts

    profile = profile_of(args)
    scope = node_scope(args)
    if args.serve:
        return _serve(args, profile, scope)
    from labeler.kube.nodes import list_nodes

    gates = kueue_gates(args)
    api = cluster(args)
    # the hot-swap view needs every node (a flavor's nodes may be outside the scope)
    selector = scope.label_selector if args.no_hotswap else None
    nodes, _ = list_nodes(api, label_selector=selector)
    devices = cluster_devices(api, scope.dra_drivers)
    facts = [
        f
        for n in nodes
        if (f := node_facts(profile.topology, scope, n, devices.get(n.name, ()))) is not None
    ]
    report = build_report(profile.name, scope.describe(), profile.topology, facts)
    view = None if args.no_hotswap else read_hot_swap(api, nodes, gates)
    if args.output == "json":
        doc = report.to_json()
        if view is not None:
            doc["hotSwap"] = view.to_json()
        print(json.dumps(doc, indent=2, sort_keys=False))
    else:
        print(render_table(report))
        if view is not None:
            from labeler.audit.render import render_hotswap

            print()
            print(render_hotswap(view))
    if report.nodes == 0:  # a gate that audited nothing must not pass
        print(
            f"warning: no node in scope ({scope.describe()}); nothing audited: "
            "check --node-selector and --resource",
            file=sys.stderr,
        )
        return Exit.INCOMPLETE
    return Exit.OK if report.ok else Exit.INCOMPLETE


def read_hot_swap(api: Any, nodes: Sequence[NodeInfo], gates: Gates) -> HotSwapView | None:
    """The hot-swap view of the cluster (one LIST of pods, Workloads, Topologies and
    ResourceFlavors), or None where Kueue's API is not served or may not be read."""
    from labeler.kube.errors import KubeError, NotFound
    from labeler.kube.kueue import list_topology_objects, list_workloads
    from labeler.sim.common.inputs import cluster_snapshot
    from labeler.sim.kueue.hotswap import hot_swap

    try:
        objects = list_workloads(api)[0] + list_topology_objects(api)
    except NotFound:
        log.info("Kueue's API is not served: no hot-swap view")
        return None
    except KubeError as e:
        if e.status != 403:
            raise
        print(f"warning: no hot-swap view: {e} (or give --no-hotswap)", file=sys.stderr)
        return None
    snap, _, problems = cluster_snapshot(api, nodes, skip_tas=True)
    view = hot_swap(snap.nodes, objects, gates)
    return replace(view, problems=(*problems, *view.problems))


def _serve(args: argparse.Namespace, profile: Profile, scope: Scope) -> int:
    from labeler.audit.serve import AuditExporter
    from labeler.base.http import ProbeServer, serve_until_signal

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (0–65535)")
    exporter = AuditExporter(
        cluster(args),
        profile,
        scope,
        options=ExporterOptions(
            debounce=args.debounce,
            watch_timeout=args.watch_timeout,
            stale_after=args.stale_after,
            hotswap_interval=args.hotswap_interval,
        ),
        page=live_map(profile, scope),
        hotswap=None if args.no_hotswap else hot_swap_of(kueue_gates(args)),
    )
    server = ProbeServer(
        exporter.registry,
        healthz=exporter.healthz,
        readyz=exporter.readyz,
        port=args.port,
        address=args.bind,
        pages={"/topology": exporter.topology_page},
    )
    exporter.start()
    log.info(
        "serving audit metrics profile=%s scope=%r on http://%s:%s/metrics",
        profile.name,
        scope.describe(),
        server.address,
        server.port,
    )
    serve_until_signal(server, threading.Event())
    exporter.stop()
    return Exit.OK


PAGE_REFRESH = 30  # seconds between reloads of the exporter's /topology page in the browser


# the exporter watches no pod: only what admitted Workloads hold is taken from a node
EXPORTER_SOURCE = (
    "free: nodes' allocatable minus what admitted Workloads hold, from the exporter's node and "
    "Workload watches (pods are not watched: non-TAS pods' requests are not subtracted)"
)


def hot_swap_of(gates: Gates) -> Callable[[Sequence[Node], Sequence[Any]], HotSwapView]:
    """The exporter's hot-swap computation (the simulator's, handed to the audit)."""

    def compute(nodes: Sequence[Node], objects: Sequence[Any]) -> HotSwapView:
        from labeler.sim.kueue.hotswap import hot_swap

        return hot_swap(nodes, objects, gates, source=EXPORTER_SOURCE)

    return compute


def live_map(
    profile: Profile, scope: Scope
) -> Callable[[Sequence[NodeFacts], HotSwapView | None], str]:
    """The exporter's ``/topology`` page: the map of the watched facts, reloading itself,
    with the domains where one node failure would evict a Workload marked."""

    def render(facts: Sequence[NodeFacts], view: HotSwapView | None) -> str:
        from labeler.topomap.model import build_map
        from labeler.topomap.render import render_html
        from labeler.topomap.risk import with_hotswap

        topo = build_map(
            profile.topology,
            facts,
            profile=profile.name,
            scope=scope.describe(),
            origin="the audit exporter's node watch (free capacity is not watched)",
            refresh=PAGE_REFRESH,
        )
        return render_html(with_hotswap(topo, view))

    return render


def run_placement(args: argparse.Namespace) -> int:
    from labeler.audit.jobview import read_job_placement
    from labeler.audit.render import render_placement

    profile = profile_of(args)
    view = read_job_placement(
        cluster(args), profile.topology, selector=args.selector, namespace=args.namespace
    )
    if args.output == "json":
        print(json.dumps(view.to_json(), indent=2))
    else:
        print(render_placement(view, all_namespaces=args.namespace is None))
    return Exit.OK
