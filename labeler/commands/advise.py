"""``advise`` and ``domains``: would a job fit, where, and at which level.

The flags of both commands; ``run_advise`` hands the input to the advisor of the
scheduler it names (``advise_input``), and this module answers the flag form (one Kueue
PodSet) and ``domains`` itself. Parsing, reading and printing only: the simulations live
in ``labeler.tas``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from labeler.base.errors import Exit, InputError, UsageError
from labeler.commands._base import (
    PROFILE_HELP,
    add_command,
    add_dra_driver,
    add_profile,
    add_report_format,
    add_source,
    add_tree_name,
    cluster,
    dra_drivers,
    origin_of,
    parse_pairs,
    print_report,
    profile_of,
    read_nodes,
    volcano_version,
)
from labeler.commands.advise_flags import DESCRIPTION as KUEUE_DESCRIPTION
from labeler.commands.advise_flags import add_kueue_options, kueue_gates, refuse_failed_nodes
from labeler.core.volcano import VERSION as VOLCANO_VERSION
from labeler.tas.kubesched import KUBERNETES as KUBE_SCHEDULER_VERSION

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from labeler.commands.advise_input import Manifest
    from labeler.core.profiles import Profile
    from labeler.tas.assign import Mode
    from labeler.tas.cluster import Snapshot
    from labeler.tas.dra import DraNote
    from labeler.tas.tree import PodShape, Tree
    from labeler.tas.usage import HeldUsage


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub,
        common,
        "advise",
        exits={
            Exit.OK: "the job fits (with failed nodes: Kueue replaces every one)",
            Exit.INCOMPLETE: "simulated: the job does not fit now (with failed nodes: some "
            "failed node is not replaced)",
        },
    )
    p.description = (
        "Would a job fit now, and where. The input says which scheduler answers. "
        "Kueue (Topology-Aware Scheduling): a quick single-PodSet question (--pods, "
        "--request, a mode; its answer also prints the Volcano and kube-scheduler "
        "equivalents of the level) or a whole Workload: -f FILE (Workload, Job, JobSet, "
        "LeaderWorkerSet) or --workload NS/NAME, whose PodSets are placed in order, "
        "leader/worker groups together. Both subtract what admitted Workloads hold; the "
        "Topology and ResourceFlavor are read from the snapshot or cluster (or --profile). "
        + KUEUE_DESCRIPTION
        + f" kube-scheduler (Kubernetes {KUBE_SCHEDULER_VERSION}, no Kueue): -f FILE holding "
        "PodGroups (scheduling.k8s.io/v1beta1) or CompositePodGroups (v1alpha3) and their pods, "
        "placed as the default scheduler's pod-group cycle does (TopologyPlacement, "
        "GangScheduling, PodGroupPodsCount, NodeResourcesFit); not modelled: preemption."
        # --- Volcano ---
        " Volcano's rules instead when the input is Volcano's: -f with a batch.volcano.sh "
        "Job, or with a scheduling.volcano.sh PodGroup and its pods, or --podgroup NS/NAME "
        "(one Volcano scheduling cycle: enqueue, allocate, gang, HyperNodes; see "
        "--scheduler-conf). A batch/v1 Job or a Workload is Kueue's."
    )
    _common(p, workload=True)
    _workload_options(p)
    add_kueue_options(p)  # Kueue's feature gates and node failures (advise_flags.py)
    # --- Volcano ---
    from labeler.commands.advise_volcano import add_options as volcano_options

    volcano_options(p)
    _podset_options(p)
    p.add_argument(
        "--html", metavar="FILE", help="also write the topology map with this placement drawn"
    )
    p.add_argument(
        "--volcano-version",
        type=volcano_version,
        default=VOLCANO_VERSION,
        help="Volcano the job runs on: before 1.14 the stanza uses highestTierAllowed "
        "(and Volcano inputs lose highestTierName, partitions, sub-groups) (default "
        + ".".join(map(str, VOLCANO_VERSION))
        + ")",
    )
    p.add_argument(
        "--affinity-config",
        metavar="level1=N1,level2=N2",
        help="Ascend trees: check this huawei.com/affinity-config against ascend-for-volcano's "
        "rules and print it (default: derived from the request)",
    )
    # Counted and named, not placed on: Kueue's TAS has no DRA (the note says what is not).
    add_dra_driver(p)
    p.set_defaults(handler=run_advise)

    d = add_command(sub, common, "domains", exits={Exit.OK: "the inventory was printed"})
    _common(d)
    d.add_argument("--pods", type=int, help="also count how many jobs of N pods fit per domain")
    _slice_options(d)
    d.add_argument("--show-nodes", action="store_true", help="list every node (hostname level) too")
    d.set_defaults(handler=run_domains)


def _podset_options(p: argparse.ArgumentParser) -> None:
    """The single PodSet of the flag form: its size, topology mode and slices."""
    p.add_argument("--pods", type=int, help="pods in the job (PodSet count)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--required", metavar="LEVEL", help="all pods in one domain at LEVEL")
    mode.add_argument(
        "--preferred", metavar="LEVEL", help="one domain at LEVEL if possible, else climb"
    )
    mode.add_argument(
        "--unconstrained",
        action="store_true",
        help="no topology constraint (Kueue's default when no annotation is set)",
    )
    _slice_options(p)
    p.add_argument(
        "--slice-layer",
        action="append",
        default=[],
        metavar="LEVEL=SIZE",
        help="an inner slice layer (multi-layer slices, Kueue TASMultiLayerTopology); "
        "repeat for a third layer, outer first",
    )


def _common(p: argparse.ArgumentParser, *, workload: bool = False) -> None:
    if workload:  # a Workload's levels can come from Kueue's Topology instead
        p.add_argument("--profile", help=PROFILE_HELP + " (optional with -f/--workload)")
        add_tree_name(p)
    else:
        add_profile(p)
    add_source(p, required=True, snapshot=True, cluster_help="read nodes and pods live")
    p.add_argument(
        "--request",
        action="append",
        required=not workload,
        metavar="RES=QTY",
        help="per-pod request, e.g. nvidia.com/gpu=8 (repeat, or comma-separate)",
    )
    p.add_argument(
        "--flavor-node-label",
        action="append",
        default=[],
        metavar="K=V",
        help="the ResourceFlavor's nodeLabels: only matching nodes are in the topology",
    )
    p.add_argument(
        "--toleration",
        action="append",
        default=[],
        metavar="KEY[=VALUE][:EFFECT]",
        help="a pod (or flavor) toleration; '*' tolerates everything",
    )
    p.add_argument(
        "--node-selector", action="append", default=[], metavar="K=V", help="pod nodeSelector"
    )
    p.add_argument(
        "--topology-name",
        help="name of the Kueue Topology object, as Kueue's messages quote it "
        "(default: the profile name)",
    )
    add_report_format(p, "text")


def _workload_options(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "-f",
        "--file",
        metavar="FILE",
        help="Kueue: a Workload (kubectl get workloads.kueue.x-k8s.io NAME -o yaml), Job, "
        "JobSet or LeaderWorkerSet manifest, every PodSet of it advised; kube-scheduler: a List of "
        "PodGroups/CompositePodGroups (scheduling.k8s.io) and their pods",
    )
    src.add_argument(
        "--workload",
        metavar="NS/NAME",
        help="a Workload from the cluster (--from-cluster) or the snapshot",
    )
    p.add_argument(
        "--flavor",
        metavar="NAME",
        help="the TAS ResourceFlavor to place on (default: the only one with a topologyName)",
    )


def _slice_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--slice-size", type=int, help="pods per slice (two-level scheduling)")
    p.add_argument("--slice-level", metavar="LEVEL", help="each slice within one domain here")


# --- parsing ---------------------------------------------------------------------------


def parse_requests(values: list[str]) -> dict[str, int]:
    from labeler.core.quantity import QuantityError, quantity_units

    out: dict[str, int] = {}
    for res, qty in parse_pairs(values, "--request", labels=False).items():
        try:
            out[res] = quantity_units(res, qty)
        except QuantityError as e:
            raise UsageError(f"--request {res}={qty}: {e}") from e
        if out[res] < 0:
            raise UsageError(f"--request {res}={qty}: a request cannot be negative")
    return out


def _shape(args: argparse.Namespace) -> PodShape:
    from labeler.tas.cluster import Toleration
    from labeler.tas.tree import PodShape

    try:
        tolerations = tuple(Toleration.parse(t) for t in args.toleration)
    except InputError as e:
        raise UsageError(str(e)) from e
    return PodShape(
        requests=parse_requests(args.request),
        tolerations=tolerations,
        node_selector=parse_pairs(args.node_selector, "--node-selector"),
    )


def _slices(args: argparse.Namespace) -> list[tuple[str, int]]:
    if (args.slice_size is None) != (args.slice_level is None):
        raise UsageError("--slice-size and --slice-level go together")
    layers: list[tuple[str, int]] = []
    if args.slice_size is not None:
        layers.append((args.slice_level, args.slice_size))
    for raw in getattr(args, "slice_layer", []):
        level, eq, size = raw.rpartition("=")
        if not eq or not level or not size.isdigit():
            raise UsageError(f"--slice-layer {raw!r}: expected LEVEL=SIZE")
        if not layers:
            raise UsageError("--slice-layer adds inner layers: give --slice-size/--slice-level")
        layers.append((level, int(size)))
    return layers


# --- reading -----------------------------------------------------------------------------


def _dra(args: argparse.Namespace, snap: Snapshot, requests: Mapping[str, int]) -> DraNote | None:
    """What advise says about the nodes whose accelerators only DRA publishes."""
    from labeler.core.dra import device_counts
    from labeler.core.scope import DEFAULT_RESOURCES
    from labeler.tas.dra import dra_note

    devices = device_counts(snap.slices, dra_drivers(args))
    extended = tuple(r for r in sorted(requests) if "/" in r)
    return dra_note(snap.nodes, devices, extended or DEFAULT_RESOURCES)


def _load(args: argparse.Namespace) -> tuple[Profile, Tree, Snapshot, HeldUsage]:
    """The profile, its tree, the nodes, and what admitted Workloads hold: Kueue counts a
    TAS pod through its Workload's topology assignment (the snapshot reader leaves such
    pods out when there are Workloads), so the quick form subtracts those assignments as
    the Workload path does."""
    from dataclasses import replace

    from labeler.tas.tree import build_tree
    from labeler.tas.usage import admitted_usage, with_held

    profile = profile_of(args)
    snap = read_nodes(args, kueue=True, kueue_optional=True)
    held = admitted_usage(snap.workloads)
    snap = replace(snap, nodes=with_held(snap.nodes, held))
    tree = build_tree(
        profile.topology,
        snap.nodes,
        flavor_labels=parse_pairs(args.flavor_node_label, "--flavor-node-label"),
        topology_name=args.topology_name or profile.name,
    )
    log.debug("topology built nodes=%d outside=%d", len(tree.leaves), len(tree.outside))
    return profile, tree, snap, held


def _with_held(text: str, doc: dict[str, Any], held: HeldUsage) -> tuple[str, dict[str, Any]]:
    """The answer saying how many admitted Workloads' capacity it subtracted."""
    if held.workloads:
        text = f"Capacity held by {held.workloads} admitted Workload(s) is subtracted.\n{text}"
    return text, {**doc, "admitted_workloads_holding_capacity": held.workloads}


# --- commands ----------------------------------------------------------------------------


def run_advise(args: argparse.Namespace) -> int:
    """The scheduler the input names (``advise_input.choose``: -f is read once there) and
    its advisor, a module beside this one, handed the file's objects; without an object,
    advise places the single PodSet of the flags."""
    from labeler.commands.advise_input import Asked, choose

    scheduler, manifest = choose(args)
    # --failed-node needs an admitted Workload
    if scheduler is Asked.FLAGS:
        refuse_failed_nodes(args, "the flags describe a new PodSet")
    elif scheduler is not Asked.KUEUE:
        refuse_failed_nodes(args, f"the input is {scheduler}'s")
    if scheduler is Asked.VOLCANO:
        from labeler.commands import advise_volcano

        return advise_volcano.run(args, manifest)
    # only a file is kube-scheduler's
    if scheduler is Asked.KUBE_SCHEDULER and manifest is not None:
        from labeler.commands import advise_podgroup

        return advise_podgroup.run(args, manifest)
    # a Workload, or the Job, JobSet or LeaderWorkerSet it is made from
    if scheduler is Asked.KUEUE:
        return _advise_workload(args, manifest)
    return _advise_podset(args)


def _advise_workload(args: argparse.Namespace, manifest: Manifest | None) -> int:
    if args.html:
        raise UsageError("--html draws one PodSet: use it without -f/--workload")
    from labeler.commands import advise_workload

    api = cluster(args) if args.from_cluster else None  # one client: --workload reads too
    snap = read_nodes(args, kueue=True, api=api)
    return advise_workload.run(args, snap, manifest, _dra(args, snap, {}), api)


def _advise_podset(args: argparse.Namespace) -> int:
    missing = [
        flag
        for flag, value in (
            ("--pods", args.pods),
            ("--request", args.request),
            ("--profile", args.profile),
        )
        if not value
    ]
    if missing:
        raise UsageError(f"give {', '.join(missing)} (or -f FILE / --workload NS/NAME)")
    from labeler.tas.advice import advise, make_job
    from labeler.tas.multilevel import check_affinity_flag
    from labeler.tas.report import advice_dict, advice_text

    gates = kueue_gates(args)
    shape = _shape(args)
    slices = _slices(args)
    profile, tree, snap, held = _load(args)
    topology = profile.topology
    mode, level = _mode(args)
    job = make_job(topology, args.pods, mode=mode, level=level, slices=slices)
    if args.affinity_config is not None:
        check_affinity_flag(args.affinity_config, args.pods, profile.topology, profile.name)
    result = advise(
        topology,
        tree,
        shape,
        job,
        volcano_version=args.volcano_version,
        affinity_config=args.affinity_config,
        gates=gates,
    )
    text, doc = advice_text(topology, result, shape.requests), advice_dict(topology, result)
    text, doc = _with_held(text, doc, held)
    dra = _dra(args, snap, shape.requests)
    if dra is not None:
        text, doc = "\n".join([text, *dra.lines()]), {**doc, "dra": dra.to_json()}
    print_report(args, text, doc)
    if args.html:
        from labeler.tas.overlay import job_overlay
        from labeler.topomap.advice import advice_map
        from labeler.topomap.render import write_html

        overlay = job_overlay(topology, tree, shape, result)
        page = advice_map(
            profile,
            tree.nodes,
            shape.requests,
            overlay,
            origin=origin_of(args),
            title=f"advise: {result.job.count} pod(s) on {profile.name}",
            devices=dra.devices if dra is not None else None,
        )
        out = write_html(args.html, page)
        print(f"map with the placement written to {out}", file=sys.stderr)
    return Exit.OK if result.outcome.fits else Exit.INCOMPLETE


def _mode(args: argparse.Namespace) -> tuple[Mode, str | None]:
    """The topology mode of --required / --preferred / --unconstrained, and its level."""
    from labeler.tas.assign import Mode

    if args.required:
        return Mode.REQUIRED, args.required
    if args.preferred:
        return Mode.PREFERRED, args.preferred
    return Mode.UNCONSTRAINED, None


def run_domains(args: argparse.Namespace) -> int:
    from labeler.tas.advice import resolve_level
    from labeler.tas.assign import SliceLayer
    from labeler.tas.inventory import inventory
    from labeler.tas.report import inventory_dict, inventory_text, stats_dict
    from labeler.tas.tree import leaf_capacity

    shape = _shape(args)
    slices = _slices(args)
    if args.pods is not None and args.pods < 1:
        raise UsageError("--pods must be at least 1")
    if slices and args.pods is not None and args.pods % slices[0][1]:
        raise UsageError(f"--slice-size {slices[0][1]} must evenly divide --pods {args.pods}")
    profile, tree, _, held = _load(args)
    topology = profile.topology
    layer = SliceLayer(resolve_level(topology, slices[0][0]), slices[0][1]) if slices else None
    now = leaf_capacity(tree, shape)
    levels = inventory(
        tree,
        now,
        leaf_capacity(tree, shape, empty=True),
        pods=args.pods,
        slice_layer=layer,
        include_nodes=args.show_nodes,
    )
    doc = inventory_dict(topology, levels, args.pods)
    doc["excluded"] = stats_dict(now.stats)
    doc["outside"] = [{"node": o.node, "reason": o.reason} for o in tree.outside]
    text = inventory_text(topology, levels, args.pods, now.stats, tree.outside)
    print_report(args, *_with_held(text, doc, held))
    return Exit.OK
