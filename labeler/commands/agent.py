"""``agent``: the per-node DaemonSet loop. Parsing and printing only."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any

from prometheus_client import CollectorRegistry

from labeler.commands._base import PROFILE_HELP, add_command, add_tree_name, cluster
from labeler.errors import UsageError
from labeler.labels import dns1123_subdomain_problems, parse_encoding


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub,
        common,
        "agent",
        "keep topology labels on this node (DaemonSet)",
        exits={
            0: "--once: labeled, already current, or definite no data; "
            "otherwise: stopped by SIGTERM",
            3: "--once: done, but a conflict was left in place (see --adopt)",
        },
    )
    p.add_argument("--profile", required=True, help=PROFILE_HELP)
    p.add_argument(
        "--node-name", default=None, help="this node's name (default: $NODE_NAME, downward API)"
    )
    p.add_argument(
        "--encoding",
        default=None,
        help="hash[:N] (default for oci-rdma), suffix:N (suffix:11 = Oracle's oci-hpc-oke "
        "labeler), raw; default: the profile's",
    )
    p.add_argument(
        "--on-missing",
        choices=["skip", "isolate"],
        default="skip",
        help="no topology data: skip (write nothing) or isolate (a unique value per node "
        "on each missing level, so Kueue still sees the node)",
    )
    p.add_argument("--once", action="store_true", help="reconcile once and exit (0/1/3)")
    p.add_argument(
        "--dry-run", action="store_true", help="print the plan, write nothing (implies --once)"
    )
    p.add_argument(
        "--adopt", action="store_true", help="take over label values topology-labeler did not set"
    )
    p.add_argument(
        "--interval",
        type=_positive,
        default=600.0,
        help="re-read the source every S seconds (±10%% jitter; default 600)",
    )
    p.add_argument("--port", type=int, default=8080, help="/metrics /healthz /readyz port")
    p.add_argument("--address", default="", help="address to bind (default: all)")
    g = p.add_argument_group("OCI instance metadata (source oci-imds)")
    g.add_argument("--imds-url", default=None, help="default http://169.254.169.254")
    g.add_argument(
        "--imds-timeout", type=_positive, default=2.0, help="seconds per IMDS request (default 2)"
    )
    g.add_argument(
        "--imds-attempts", type=int, default=3, help="IMDS requests per read, with backoff"
    )
    a = p.add_argument_group("Ascend NPU driver (source ascend, profile ascend-superpod)")
    add_tree_name(
        a, help_text="value of huawei.com/topotree, the tree name (default: 'default'; never empty)"
    )
    a.add_argument(
        "--ascend-reader",
        choices=["auto", "npu-smi", "dcmi"],
        default="auto",
        help="how to ask the driver: libdcmi.so via ctypes, the npu-smi CLI, or auto "
        "(DCMI, then npu-smi; default)",
    )
    a.add_argument(
        "--dcmi-lib",
        default=None,
        help="path of libdcmi.so (default: searched under /usr/local/Ascend/driver/lib64 "
        "and /usr/local/dcmi)",
    )
    a.add_argument("--npu-smi", default="npu-smi", help="npu-smi command or path")
    a.add_argument(
        "--npu-smi-timeout",
        type=_positive,
        default=10.0,
        help="seconds per npu-smi call (default 10)",
    )
    a.add_argument(
        "--ascend-generation",
        choices=["auto", "a3", "a5"],
        default="auto",
        help="a5 adds huawei.com/topotree.rackid/.serverid; auto: A5 when the driver "
        "reports a 1D/2D SuperPoD type (default)",
    )
    p.set_defaults(handler=run)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def run(args: argparse.Namespace) -> int:
    from labeler.agent.loop import Agent, AgentConfig, serve
    from labeler.kube.events import NodeEvents
    from labeler.metrics import agent_metrics
    from labeler.profiles import load_profile
    from labeler.sources.ascend import check_tree_name
    from labeler.sources.select import make_source

    node = args.node_name or os.environ.get("NODE_NAME", "")
    if not node:
        raise UsageError("no node name: pass --node-name or set NODE_NAME (downward API)")
    problems = dns1123_subdomain_problems(node)
    if problems:
        raise UsageError(f"--node-name {node!r} is not a valid node name: {'; '.join(problems)}")
    if args.imds_attempts < 1:
        raise UsageError("--imds-attempts must be at least 1")
    profile = load_profile(args.profile, tree_name=args.topotree_name)
    if args.topotree_name is not None:
        if not profile.topology.tree_label:
            raise UsageError(f"--topotree-name: profile {profile.name!r} has no tree label to set")
        check_tree_name(args.topotree_name, profile.topology.tree_label)
    encoding = parse_encoding(args.encoding or profile.encoding)
    stop = threading.Event()
    source = make_source(profile, args, stop)
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
    if result.status == "error":
        print(f"error: {result.message}", file=sys.stderr)
    elif result.status == "conflict":
        print(f"conflict: {result.message}", file=sys.stderr)
    elif not args.dry_run:
        if result.status == "no_data":
            print(f"node {node}: no topology data ({result.message}); nothing written")
        elif result.written and result.plan is not None:
            print(f"node {node}: labels written ({len(result.plan.labels)} changed)")
        else:
            print(f"node {node}: labels already current")
    return result.exit_code
