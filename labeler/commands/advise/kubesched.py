"""``advise -f FILE`` when FILE holds kube-scheduler PodGroups or CompositePodGroups.

The file (a List, a YAML stream or one object) holds ``scheduling.k8s.io`` PodGroups
and/or CompositePodGroups and their pending Pods; the cluster's or the snapshot's nodes,
pods and other groups are what kube-scheduler would see. The simulation is
``labeler.sim.kubesched``; this module reads, checks the flags and prints.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from labeler.base.errors import Exit, InputError, UsageError
from labeler.base.logs import logger
from labeler.commands._base import cluster, origin_of, print_report, profile_of

if TYPE_CHECKING:
    from labeler.commands.advise.input import Manifest

log = logger(__name__)

# flags of the Kueue forms that a PodGroup file answers itself
NOT_WITH_PODGROUPS = (
    ("pods", "--pods"),
    ("required", "--required"),
    ("preferred", "--preferred"),
    ("unconstrained", "--unconstrained"),
    ("slice_size", "--slice-size"),
    ("slice_level", "--slice-level"),
    ("slice_layer", "--slice-layer"),
    ("request", "--request"),
    ("flavor", "--flavor"),
    ("affinity_config", "--affinity-config"),
)


def _check_flags(args: argparse.Namespace) -> None:
    given = [flag for attr, flag in NOT_WITH_PODGROUPS if getattr(args, attr, None)]
    if given:
        raise UsageError(
            f"{', '.join(given)}: not used with a PodGroup file (-f {args.file}): the "
            "PodGroups and their pods say what to place"
        )
    if args.html and not args.profile:
        raise UsageError("--html with a PodGroup file needs --profile (the map's levels)")


def _known(args: argparse.Namespace) -> tuple[Any, list[tuple[Mapping[str, Any], str]]]:
    """The nodes (with usage) and the objects kube-scheduler sees besides the file's."""
    if args.from_cluster:
        from labeler.kube.podgroups import list_pod_groups
        from labeler.sim.common.inputs import read_cluster_objects

        api = cluster(args)
        snap, pods = read_cluster_objects(api)
        groups = list_pod_groups(api)
        named: list[tuple[Mapping[str, Any], str]] = [(o, "the cluster") for o in [*groups, *pods]]
        return snap, named
    from labeler.sim.common.inputs import read_snapshot_objects

    # kube-scheduler counts every bound pod, Kueue's TAS pods too (Kueue alone counts
    # those through their Workloads)
    snap, items = read_snapshot_objects(args.from_snapshot, tas_pods_via_workloads=False)
    origin = args.from_snapshot
    return snap, [(o, f"{origin}: items[{i}]") for i, o in enumerate(items) if _is_map(o)]


def _is_map(o: Any) -> bool:
    return isinstance(o, Mapping)


def run(args: argparse.Namespace, manifest: Manifest) -> int:
    """Advise every hierarchy the file names; 0 when every pending pod is bound, 3 if not."""
    from labeler.sim.kubesched.objects import collect, roots
    from labeler.sim.kubesched.report import advice_dict, advice_text
    from labeler.sim.kubesched.schedule import advise

    _check_flags(args)
    snap, known = _known(args)
    asked = [(o, manifest.where(i)) for i, o in enumerate(manifest.objects)]
    objs = collect(asked, known)
    if not any(p.node is None for p in objs.pods) and not objs.orphans:
        raise InputError(
            f"{manifest.path}: no pending pod of its PodGroups (pods join one with "
            "spec.schedulingGroup.podGroupName): add them, e.g. from "
            "'kubectl get pods -o yaml'"
        )
    roots(objs, manifest.path)  # a missing parent is an error before anything is printed
    advice = advise(objs, snap.nodes, manifest.path)
    print_report(args, advice_text(advice), advice_dict(advice))
    if args.html:
        _html(args, snap.nodes, advice)
    return Exit.OK if advice.fits else Exit.INCOMPLETE


def _html(args: argparse.Namespace, nodes: Sequence[Any], advice: Any) -> None:
    from labeler.sim.kubesched.overlay import podgroup_overlay
    from labeler.topomap.advice import advice_map
    from labeler.topomap.render import write_html

    profile = profile_of(args)
    requests: dict[str, int] = {}
    for p in advice.pods:
        for res, qty in p.pod.shape.requests.items():
            requests[res] = max(requests.get(res, 0), qty)
    page = advice_map(
        profile,
        nodes,
        requests,
        podgroup_overlay(profile.topology, nodes, advice),
        origin=origin_of(args),
        title=f"advise: {len(advice.pods)} pod(s) of {args.file} (kube-scheduler)",
    )
    out = write_html(args.html, page)
    print(f"map with the placement written to {out}", file=sys.stderr)
