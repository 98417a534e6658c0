"""``agent``: the per-node DaemonSet loop. Parsing and printing only. Each topology source
declares its own flags (``SourceKind.flags``); they become one argparse group per source
here, and what they parse is handed to the sources as each one's own settings."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any

from labeler.agent.config import AgentConfig
from labeler.agent.decide import OnMissing, Status
from labeler.base.errors import Exit, UsageError
from labeler.base.flags import enum_flag, positive_number
from labeler.commands._base import (
    add_command,
    add_profile,
    add_slinky,
    add_tree_name,
    cluster,
    flag_value,
    slinky_from_args,
)
from labeler.core.labels import dns1123_subdomain_problems, key_problems, parse_encoding
from labeler.sources import Settings
from labeler.sources.select import KINDS

DEFAULT_GATE_TAINT = "topology-labeler.io/not-ready"


_AGENT_EXITS = {
    Exit.OK: "--once: labeled, already current, or definite no data; otherwise: stopped by SIGTERM",
    Exit.INCOMPLETE: "--once: done, but a conflict was left in place (see --adopt)",
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(sub, common, "agent", exits=_AGENT_EXITS)
    add_profile(p, tree_name=False)  # the tree name comes further down, with its own help
    p.add_argument(
        "--node-name", default=None, help="this node's name (default: $NODE_NAME, downward API)"
    )
    p.add_argument(
        "--encoding",
        type=flag_value(parse_encoding),
        default=None,
        help="hash[:N] (default for oci-rdma), suffix:N (suffix:11 = Oracle's oci-hpc-oke "
        "labeler), raw; default: the profile's",
    )
    p.add_argument(
        "--on-missing",
        **enum_flag(OnMissing),
        default=AgentConfig.on_missing,
        help="no topology data: skip (write nothing) or isolate (a unique value per node "
        "on each missing level, so Kueue still sees the node); default: %(default)s",
    )
    p.add_argument("--once", action="store_true", help="reconcile once and exit (0/1/3)")
    p.add_argument(
        "--dry-run", action="store_true", help="print the plan, write nothing (implies --once)"
    )
    p.add_argument(
        "--adopt",
        action="store_true",
        help="take over label values topology-labeler did not set, or that apply owns",
    )
    p.add_argument(
        "--interval",
        type=positive_number,
        default=AgentConfig.interval,
        help=f"re-read the source every S seconds (±{AgentConfig.jitter * 100:g}%% jitter; "
        "default %(default)g)",
    )
    p.add_argument(
        "--confirm-reads",
        type=int,
        default=AgentConfig.confirm_reads,
        metavar="N",
        help="a change of topology source or of any level value is written only after N "
        "reads in a row agree (default %(default)s; 1 = at once); the first labeling needs "
        "none",
    )
    gate = p.add_argument_group("readiness gate (off unless asked)")
    gate.add_argument(
        "--remove-taint",
        nargs="?",
        const=DEFAULT_GATE_TAINT,
        default=None,
        metavar="KEY",
        help=f"remove this node's NoSchedule taint KEY (default {DEFAULT_GATE_TAINT}) once "
        "every level label is on it; never adds it back, never touches another taint",
    )
    gate.add_argument(
        "--set-condition",
        action="store_true",
        help="keep the Node condition TopologyLabeled (True/False with a reason) on this "
        "node, e.g. for a Node Readiness Controller rule",
    )
    p.add_argument("--port", type=int, default=8080, help="/metrics /healthz /readyz port")
    p.add_argument("--address", default="", help="address to bind (default: all)")
    add_slinky(p)
    add_tree_name(
        p, help_text="value of huawei.com/topotree, the tree name (default: 'default'; never empty)"
    )
    add_source_flags(p)
    p.set_defaults(handler=run_agent)


def add_source_flags(parser: argparse.ArgumentParser) -> None:
    """Every source's flag group; a flag's default is its option's default."""
    for kind in KINDS:
        group = parser.add_argument_group(kind.title)
        for flag in kind.flags:
            typed: dict[str, Any] = {"type": flag.type} if flag.type else {}
            group.add_argument(
                flag.name,
                **typed,
                dest=f"{kind.name}:{flag.field}",
                default=getattr(kind.defaults, flag.field),
                choices=flag.choices,
                metavar=flag.metavar or (None if flag.choices else flag.field.upper()),
                help=flag.help,
            )


def source_settings(args: argparse.Namespace) -> dict[str, Settings]:
    """What each source's flag group parsed, as its settings (field → value)."""
    values = vars(args)
    return {
        kind.name: {flag.field: values[f"{kind.name}:{flag.field}"] for flag in kind.flags}
        for kind in KINDS
    }


def run_agent(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry

    from labeler.agent.loop import Agent, serve
    from labeler.base.metrics import agent_metrics
    from labeler.core.profiles import load_profile
    from labeler.kube.events import NodeEvents
    from labeler.sources.select import make_source

    node = args.node_name or os.environ.get("NODE_NAME", "")
    if not node:
        raise UsageError("no node name: pass --node-name or set NODE_NAME (downward API)")
    problems = dns1123_subdomain_problems(node)
    if problems:
        raise UsageError(f"--node-name {node!r} is not a valid node name: {'; '.join(problems)}")
    profile = load_profile(args.profile, tree_name=args.topotree_name)
    tree_label = profile.topology.tree_label
    if args.topotree_name is not None and not tree_label:
        raise UsageError(f"--topotree-name: profile {profile.name!r} has no tree label to set")
    encoding = args.encoding or parse_encoding(profile.encoding)
    if args.remove_taint is not None:
        taint_problems = key_problems(args.remove_taint)
        if taint_problems:
            raise UsageError(
                f"--remove-taint {args.remove_taint!r} is not a valid taint key: "
                + "; ".join(taint_problems)
            )
    if args.confirm_reads < 1:
        raise UsageError(f"--confirm-reads must be at least 1, got {args.confirm_reads}")
    slinky = slinky_from_args(args, profile)
    stop = threading.Event()
    source = make_source(profile, source_settings(args), stop)
    api = cluster(args)
    once = args.once or args.dry_run
    config = AgentConfig(
        node=node,
        profile=profile,
        encoding=encoding,
        on_missing=args.on_missing,
        adopt=args.adopt,
        dry_run=args.dry_run,
        interval=args.interval,
        confirm_reads=args.confirm_reads,
        remove_taint=args.remove_taint,
        set_condition=args.set_condition,
        slinky=slinky,
    )
    agent = Agent(
        api,
        source,
        config,
        metrics=agent_metrics(CollectorRegistry()),
        events=NodeEvents(api, node),
        stop=stop,
    )
    if not once:
        return serve(agent, port=args.port, address=args.address)
    result = agent.once()
    if args.dry_run and result.text:
        print(result.text)
    if result.status in (Status.ERROR, Status.INCOMPLETE):
        print(f"error: {result.message}", file=sys.stderr)
    elif result.status == Status.CONFLICT:
        print(f"conflict: {result.message}", file=sys.stderr)
    elif not args.dry_run:
        if result.status == Status.NO_DATA:
            print(f"node {node}: no topology data ({result.message}); nothing written")
        elif result.written and result.plan is not None:
            print(f"node {node}: labels written ({len(result.plan.labels)} changed)")
        else:
            print(f"node {node}: labels already current")
    return result.exit_code
