"""Kueue's answer to the flag form of ``advise`` (one PodSet: --pods, --request, a mode) and
``domains`` (free pod slots per domain). Reading and printing only: the simulation is
``labeler.sim.kueue``, imported inside the handlers so that building the parser loads none of
it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from labeler.base.errors import Exit, InputError, UsageError
from labeler.base.logs import logger
from labeler.commands._base import (
    dra_drivers,
    origin_of,
    parse_pairs,
    print_report,
    profile_of,
    read_nodes,
)
from labeler.commands.advise.kueue_flags import kueue_gates

log = logger(__name__)

if TYPE_CHECKING:
    from labeler.core.profiles import Profile
    from labeler.sim.common.cluster import Snapshot
    from labeler.sim.common.shape import PodShape
    from labeler.sim.kueue.assign import Mode
    from labeler.sim.kueue.dra import DraNote
    from labeler.sim.kueue.tree import Tree
    from labeler.sim.kueue.usage import HeldUsage


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
    from labeler.sim.common.cluster import Toleration
    from labeler.sim.common.shape import PodShape

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


def dra_note_of(
    args: argparse.Namespace, snap: Snapshot, requests: Mapping[str, int]
) -> DraNote | None:
    """What advise says about the nodes whose accelerators only DRA publishes."""
    from labeler.core.dra import device_counts
    from labeler.core.scope import DEFAULT_RESOURCES
    from labeler.sim.kueue.dra import dra_note

    devices = device_counts(snap.slices, dra_drivers(args))
    extended = tuple(r for r in sorted(requests) if "/" in r)
    return dra_note(snap.nodes, devices, extended or DEFAULT_RESOURCES)


def _load(args: argparse.Namespace) -> tuple[Profile, Tree, Snapshot, HeldUsage]:
    """The profile, its tree, the nodes, and what admitted Workloads hold: Kueue counts a
    TAS pod through its Workload's topology assignment (the snapshot reader leaves such
    pods out when there are Workloads), so the quick form subtracts those assignments as
    the Workload path does."""
    from dataclasses import replace

    from labeler.sim.kueue.tree import build_tree
    from labeler.sim.kueue.usage import admitted_usage, with_held

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


def run(args: argparse.Namespace) -> int:
    """Advise the single PodSet the flags describe."""
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
    from labeler.sim.kueue.advice import advise, make_job
    from labeler.sim.kueue.multilevel import check_affinity_flag
    from labeler.sim.kueue.report import advice_dict, advice_text

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
    dra = dra_note_of(args, snap, shape.requests)
    if dra is not None:
        text, doc = "\n".join([text, *dra.lines()]), {**doc, "dra": dra.to_json()}
    print_report(args, text, doc)
    if args.html:
        from labeler.sim.kueue.overlay import job_overlay
        from labeler.topomap.advice import advice_map
        from labeler.topomap.render import write_html

        overlay = job_overlay(topology, tree, result)
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
    from labeler.sim.kueue.assign import Mode

    if args.required:
        return Mode.REQUIRED, args.required
    if args.preferred:
        return Mode.PREFERRED, args.preferred
    return Mode.UNCONSTRAINED, None


def run_domains(args: argparse.Namespace) -> int:
    from labeler.sim.kueue.advice import resolve_level
    from labeler.sim.kueue.assign import SliceLayer
    from labeler.sim.kueue.inventory import inventory
    from labeler.sim.kueue.report import inventory_dict, inventory_text, stats_dict
    from labeler.sim.kueue.tree import leaf_capacity

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
