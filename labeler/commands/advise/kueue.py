"""``advise -f FILE`` / ``advise --workload NS/NAME``: why is this Workload pending?

Reads the Workload (or the Job, JobSet or LeaderWorkerSet Kueue makes it from), the nodes
and pods, the admitted Workloads and the Kueue Topology and ResourceFlavor, then places
every PodSet as Kueue would (``labeler.sim.kueue.admit``) and prints the answer.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labeler.base.errors import Exit, InputError, UsageError
from labeler.commands._base import (
    cluster,
    namespaced_name,
    origin_of,
    parse_pairs,
    print_report,
    profile_of,
    read_nodes,
)
from labeler.commands.advise.input import KUEUE_KINDS, Manifest
from labeler.commands.advise.kueue_flags import kueue_gates
from labeler.commands.advise.kueue_podset import dra_note_of
from labeler.sim.common.cluster import Snapshot
from labeler.sim.kueue.admit import WorkloadResult, add_usage, place_workload
from labeler.sim.kueue.dra import DraNote
from labeler.sim.kueue.gates import Gates
from labeler.sim.kueue.queues import FlavorChoice, choose_flavors
from labeler.sim.kueue.tree import Tree, build_tree_for_levels
from labeler.sim.kueue.usage import HeldUsage, TasFlavor, admitted_usage, sharing_usage, tas_flavor
from labeler.sim.kueue.workload import Workload, with_tolerations, workloads_from_object
from labeler.sim.kueue.workload_report import workload_dict, workload_text

if TYPE_CHECKING:
    from labeler.kube.client import Api


def _manifest_objects(manifest: Manifest) -> list[tuple[Mapping[str, Any], str]]:
    """The Workload, Job, JobSet and LeaderWorkerSet objects of the -f file, and where each is."""
    return [
        (obj, manifest.where(i))
        for i, obj in enumerate(manifest.objects)
        if obj.get("kind") in KUEUE_KINDS
    ]


def _workload_object(
    args: argparse.Namespace,
    manifest: Manifest | None,
    objects: Sequence[Mapping[str, Any]],
    api: Api | None,
) -> tuple[list[tuple[Mapping[str, Any], str]], tuple[str, str] | None]:
    """The objects to advise (and where each is), and the Workload's own (ns, name)."""
    if manifest is not None:
        return _manifest_objects(manifest), None
    ns, name = namespaced_name("--workload", args.workload)
    where = f"Workload {ns}/{name}"
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "Workload" and (meta.get("namespace"), meta.get("name")) == (
            ns,
            name,
        ):
            return [(obj, where)], (ns, name)
    if api is not None:
        from labeler.kube.kueue import get_workload

        return [(get_workload(api, ns, name), where)], (ns, name)
    raise InputError(
        f"{args.from_snapshot}: no Workload {ns}/{name} "
        "(add 'kubectl get workloads.kueue.x-k8s.io -A -o yaml' to the snapshot)"
    )


def advise_workload(
    args: argparse.Namespace,
    snap: Snapshot,
    manifest: Manifest | None,
    dra: DraNote | None,
    api: Api | None = None,
) -> int:
    """Advise every PodSet of the -f file's objects (``manifest``) or of --workload (or, for
    an admitted Workload with failed nodes, what Kueue does about them); 0 when all fit, 3
    when any does not. ``dra``: what to say about the nodes whose accelerators only DRA
    publishes; ``api``: the client ``snap`` was read with (--from-cluster)."""
    gates = kueue_gates(args)
    objects = list(snap.kueue)
    found, self_ref = _workload_object(args, manifest, objects, api)
    origin = origin_of(args)
    # --- failed nodes: an admitted Workload (kueue_failure.py) ---------------------------
    from labeler.commands.advise.kueue_failure import failure_answer, failure_mode

    failing = failure_mode(args, snap, found, gates, origin)
    if failing is not None:
        text, doc, fits = failure_answer(args, snap, failing, gates, origin)
        return _print(args, text, doc, fits=fits, dra=dra)
    workloads = [w for obj, where in found for w in workloads_from_object(obj, where)]
    choice: FlavorChoice | None = None
    if args.profile:
        profile = profile_of(args)
        tree: Tree = build_tree_for_levels(
            profile.topology.kueue_levels(),
            snap.nodes,
            flavor_labels=parse_pairs(args.flavor_node_label, "--flavor-node-label"),
            topology_name=args.topology_name or profile.name,
        )
        tries = [_place(tree, None, workloads, objects, self_ref, gates)]
    else:
        flavors, choice = _flavors(args, objects, found, workloads, origin)
        if choice is not None and not choice.candidates:
            return _print(args, *_no_flavor(choice), fits=False, dra=dra)
        tries = []
        for flavor in flavors:  # in the ClusterQueue's order, until one takes the Workload
            tree = build_tree_for_levels(
                flavor.levels,
                snap.nodes,
                flavor_labels=flavor.node_labels,
                topology_name=flavor.topology,
            )
            tries.append(_place(tree, flavor, workloads, objects, self_ref, gates))
            if tries[-1].fits:
                break
    done = tries[-1] if tries[-1].fits else tries[0]
    flavor_name = done.flavor.name if done.flavor else None
    held = done.held.workloads
    doc = workload_dict(done.tree, done.results, flavor=flavor_name, held=held, gates=gates)
    text = workload_text(done.tree, done.results, flavor=flavor_name, held=held, gates=gates)
    text = "\n".join([*queue_lines(choice, tries), text])
    return _print(args, text, {**doc, **queue_dict(choice, tries)}, fits=done.fits, dra=dra)


def _no_flavor(choice: FlavorChoice) -> tuple[str, dict[str, Any]]:
    """The answer when no flavor of the ClusterQueue can take the Workload: Kueue keeps it
    pending with the flavor assigner's reasons."""
    text = "\n".join(
        [
            *queue_lines(choice, []),
            "Verdict: does NOT fit now; Kueue keeps the Workload pending with:",
            f"  {choice.message}",
        ]
    )
    doc = {"fits": False, "message": choice.message, "workloads": [], **queue_dict(choice, [])}
    return text, doc


def _print(
    args: argparse.Namespace,
    text: str,
    doc: dict[str, Any],
    *,
    fits: bool,
    dra: DraNote | None,
) -> int:
    """Print the answer (text or ``-o json``) with the DRA note; the exit code of ``fits``."""
    if dra is not None:
        text, doc = "\n".join([text, *dra.lines()]), {**doc, "dra": dra.to_json()}
    print_report(args, text, doc)
    return Exit.OK if fits else Exit.INCOMPLETE


@dataclass(frozen=True)
class Try:
    """The Workload placed on one flavor."""

    flavor: TasFlavor | None  # None: the profile's topology
    tree: Tree
    results: list[WorkloadResult]
    held: HeldUsage

    @property
    def fits(self) -> bool:
        return all(r.fits for r in self.results)

    @property
    def message(self) -> str:
        return next((r.message for r in self.results if not r.fits), "")


def _place(
    tree: Tree,
    flavor: TasFlavor | None,
    workloads: Sequence[Workload],
    objects: Sequence[Mapping[str, Any]],
    self_ref: tuple[str, str] | None,
    gates: Gates,
) -> Try:
    held = admitted_usage(
        [o for o in objects if o.get("kind") == "Workload"],
        flavors=sharing_usage(objects, flavor) if flavor else None,
        skip=self_ref,
    )
    # several Workloads (a LeaderWorkerSet's groups) are admitted one after another
    used = {k: dict(v) for k, v in held.by_leaf.items()}
    extra = flavor.tolerations if flavor else ()
    results = []
    for wl in workloads:
        wl = Workload(
            wl.name,
            tuple(with_tolerations(ps, extra) for ps in wl.podsets),
            wl.namespace,
            wl.uid,
        )
        result = place_workload(tree, wl, used, gates)
        results.append(result)
        for r in result.podsets:
            if r.outcome.fits:
                add_usage(used, tree, r.outcome.assignment, r.podset.shape.requests)
    return Try(flavor, tree, results, held)


def _flavors(
    args: argparse.Namespace,
    objects: Sequence[Mapping[str, Any]],
    found: Sequence[tuple[Mapping[str, Any], str]],
    workloads: Sequence[Workload],
    origin: str,
) -> tuple[list[TasFlavor], FlavorChoice | None]:
    """--flavor; else the flavors the Workload's queues offer, in order; else the only one."""
    if args.flavor:
        return [tas_flavor(objects, args.flavor, origin)], None
    podsets = [ps for wl in workloads for ps in wl.podsets]
    choice = choose_flavors(objects, found[0][0], podsets, origin) if len(found) == 1 else None
    if choice is not None:
        return list(choice.candidates), choice
    return [tas_flavor(objects, None, origin)], None


def queue_dict(choice: FlavorChoice | None, tries: Sequence[Try]) -> dict[str, Any]:
    return {
        "local_queue": choice.local_queue if choice else None,
        "cluster_queue": choice.cluster_queue if choice else None,
        "flavors_tried": [
            {"flavor": t.flavor.name, "fits": t.fits, "message": t.message}
            for t in tries
            if t.flavor is not None
        ],
        "flavors_skipped": [
            {"flavor": f, "reason": why} for f, why in (choice.skipped if choice else ())
        ],
    }


def queue_lines(choice: FlavorChoice | None, tries: Sequence[Try]) -> list[str]:
    if choice is None:
        return []
    lines = [
        f"LocalQueue {choice.local_queue} → ClusterQueue {choice.cluster_queue}; TAS flavors "
        f"in its order: {', '.join(f.name for f in choice.candidates) or 'none it can use'}"
    ]
    lines += [f"  skipped {f}: {why}" for f, why in choice.skipped]
    if len(tries) > 1:
        lines += [
            f"  tried {t.flavor.name}: " + ("fits" if t.fits else t.message)
            for t in tries
            if t.flavor is not None
        ]
    return lines


def run(args: argparse.Namespace, manifest: Manifest | None) -> int:
    """Kueue's advisor: the -f file's objects (``manifest``) or --workload, on the snapshot's
    or the cluster's nodes."""
    if args.html:
        raise UsageError("--html draws one PodSet: use it without -f/--workload")
    api = cluster(args) if args.from_cluster else None  # one client: --workload reads too
    snap = read_nodes(args, kueue=True, api=api)
    return advise_workload(args, snap, manifest, dra_note_of(args, snap, {}), api)
