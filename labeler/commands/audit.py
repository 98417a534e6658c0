"""``audit`` and ``placement``: nodes the schedulers cannot see, and where a job landed
Parsing and printing only; the logic is in ``labeler.audit``."""

from __future__ import annotations

import argparse
import json
import logging
import threading
from typing import TYPE_CHECKING, Any

from labeler.commands._base import (
    add_command,
    add_profile,
    add_report_format,
    add_scope,
    cluster,
    node_scope,
)
from labeler.errors import UsageError
from labeler.profiles import Profile, load_profile

if TYPE_CHECKING:
    from labeler.audit.jobview import JobPlacement
    from labeler.scope import Scope

log = logging.getLogger(__name__)

EXIT_NOT_LABELED = 3  # the audit ran, and some node in scope is not fully labeled

# Up to this many distinct nodes, ``placement`` GETs each; beyond, one LIST is cheaper.
_GET_EACH_LIMIT = 50


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub,
        common,
        "audit",
        "report (or export as Prometheus metrics) the nodes topology-aware schedulers "
        "cannot use: labeled / partial / unlabeled / inconsistent",
        exits={
            0: "every node in scope is fully labeled (with --serve: stopped by a signal)",
            EXIT_NOT_LABELED: "audited: some node in scope is not fully labeled",
        },
    )
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
    g.add_argument("--bind", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    g.add_argument(
        "--watch-timeout",
        type=int,
        default=300,
        help="seconds before each WATCH request is renewed (default 300)",
    )
    g.add_argument("--debounce", type=float, default=0.1, help=argparse.SUPPRESS)
    p.set_defaults(handler=run_audit)

    q = add_command(
        sub,
        common,
        "placement",
        "show where a job's pods landed: each pod's node and its domain at every level",
        exits={0: "the placement was printed (also when no pod matched)"},
    )
    q.add_argument("-l", "--selector", required=True, help="pod label selector, e.g. job-name=X")
    q.add_argument("-n", "--namespace", help="namespace (default: all namespaces)")
    add_profile(q, default="oci-rdma")
    add_report_format(q, "table")
    q.set_defaults(handler=run_placement)


def run_audit(args: argparse.Namespace) -> int:
    from labeler.audit.facts import node_facts
    from labeler.audit.render import render_table
    from labeler.audit.report import build_report

    profile = load_profile(args.profile, tree_name=args.topotree_name)
    scope = node_scope(args)
    if args.serve:
        return _serve(args, profile, scope)
    from labeler.kube.nodes import list_nodes

    nodes, _ = list_nodes(cluster(args), label_selector=scope.label_selector)
    facts = [f for n in nodes if (f := node_facts(profile.topology, scope, n)) is not None]
    report = build_report(profile.name, scope.describe(), profile.topology, facts)
    if args.output == "json":
        print(json.dumps(report.to_json(), indent=2, sort_keys=False))
    else:
        print(render_table(report))
    if report.nodes == 0:
        log.warning("no node in scope (%s); nothing to audit", scope.describe())
    return 0 if report.ok else EXIT_NOT_LABELED


def _serve(args: argparse.Namespace, profile: Profile, scope: Scope) -> int:
    from labeler.audit.serve import AuditExporter, ExporterOptions
    from labeler.http import ProbeServer, serve_until_signal

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (0–65535)")
    exporter = AuditExporter(
        cluster(args),
        profile,
        scope,
        options=ExporterOptions(debounce=args.debounce, watch_timeout=args.watch_timeout),
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
    return 0


def run_placement(args: argparse.Namespace) -> int:
    from labeler.audit.jobview import job_placement
    from labeler.kube.errors import NotFound
    from labeler.kube.nodes import get_node, list_nodes
    from labeler.kube.pods import list_pods

    profile = load_profile(args.profile, tree_name=args.topotree_name)
    api = cluster(args)
    pods = list_pods(api, namespace=args.namespace, label_selector=args.selector)
    wanted = {n for p in pods if (n := (p.get("spec") or {}).get("nodeName"))}
    labels: dict[str, dict[str, str]] = {}
    if len(wanted) > _GET_EACH_LIMIT:
        nodes, _ = list_nodes(api)
        labels = {n.name: dict(n.labels) for n in nodes if n.name in wanted}
    else:
        for name in sorted(wanted):
            try:
                labels[name] = dict(get_node(api, name).labels)
            except NotFound:
                log.warning("node=%s named by a pod no longer exists", name)
    view = job_placement(profile.topology, pods, labels)
    if args.output == "json":
        print(json.dumps(_placement_json(view), indent=2))
    else:
        print(_placement_table(view, all_namespaces=args.namespace is None))
    return 0


def _placement_json(view: JobPlacement) -> dict[str, Any]:
    levels = view.topology.levels
    return {
        "verdict": view.verdict(),
        "pods": [
            {
                "namespace": p.namespace,
                "name": p.name,
                "phase": p.phase,
                "node": p.node,
                "nodeFound": p.node_found,
                "domains": {lv.name: v for lv, v in zip(levels, p.values, strict=True)},
            }
            for p in view.pods
        ],
        "levels": [
            {
                "name": s.level.name,
                "key": s.level.key,
                "pods": dict(s.domains),
                "podsOnUnlabeledNodes": s.unlabeled,
            }
            for s in view.spread()
        ],
    }


def _placement_table(view: JobPlacement, *, all_namespaces: bool) -> str:
    if not view.pods:
        return view.verdict()
    levels = view.topology.levels
    head = (["NAMESPACE"] if all_namespaces else []) + ["POD", "PHASE", "NODE"]
    rows = [head + [lv.name.upper() for lv in levels]]
    for p in view.pods:
        node = p.node or "<pending>"
        if p.node and not p.node_found:
            node += " (gone)"
        cells = [p.namespace] if all_namespaces else []
        cells += [p.name, p.phase, node]
        cells += ["-" if p.pending else (v if v is not None else "<none>") for v in p.values]
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append("")
    lines.append(view.verdict())
    return "\n".join(lines)
