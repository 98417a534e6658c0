"""``advise --workload NS/NAME [--failed-node NODE …]``: what Kueue does when nodes fail.

An admitted Workload is judged as Kueue's node controller and scheduler would
(``labeler.sim.kueue.failure``): with ``--failed-node``, or when nodes of its assignment already
failed in the snapshot or its ``status.unhealthyNodes`` lists one. Exit 0 when every failed
node is replaced (or none touches the Workload), 3 when not.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from labeler.base.errors import InputError
from labeler.sim.common.cluster import Snapshot
from labeler.sim.kueue.admitted import (
    admitted_from_object,
    assigned_nodes,
    is_admitted,
    require_admitted,
    tas_flavor_names,
    what_if,
)
from labeler.sim.kueue.failure import node_failures
from labeler.sim.kueue.failure_report import failure_dict, failure_text
from labeler.sim.kueue.gates import Gates


def failure_mode(
    args: argparse.Namespace,
    snap: Snapshot,
    found: Sequence[tuple[Mapping[str, Any], str]],
    gates: Gates,
    origin: str,
) -> Mapping[str, Any] | None:
    """The admitted Workload to judge for failures, or None for the ordinary placement.

    ``--failed-node`` needs exactly one admitted Workload; without it, an admitted Workload
    is judged when one of its nodes has failed already."""
    failed: list[str] = args.failed_node
    workloads = [obj for obj, _ in found if obj.get("kind") == "Workload"]
    if failed:
        if len(found) != 1 or not workloads:
            raise InputError(
                "--failed-node needs one admitted Workload: give --workload NS/NAME, or -f a "
                "file holding one Workload (kubectl get workloads.kueue.x-k8s.io NAME -o yaml)"
            )
        obj, where = found[0]
        require_admitted(obj, where)
        known = {n.name for n in snap.nodes} | assigned_nodes(obj, where)
        unknown = [n for n in failed if n not in known]
        if unknown:  # a typo, most likely
            raise InputError(
                f"--failed-node {', '.join(unknown)}: no such node in {origin}, nor in the "
                "Workload's assignment (a node's name, as 'kubectl get nodes' lists it)"
            )
        return obj
    if len(workloads) == 1 and len(found) == 1 and is_admitted(workloads[0]):
        obj = workloads[0]
        wl = admitted_from_object(obj, tas_flavor_names(snap.kueue), found[0][1])
        nodes = {n.name: n for n in snap.nodes}
        running = snap.running.get((wl.namespace, wl.name), {})
        if any(f.podsets for f in node_failures(wl, nodes, (), running, gates)):
            return obj
    return None


def failure_answer(
    args: argparse.Namespace,
    snap: Snapshot,
    obj: Mapping[str, Any],
    gates: Gates,
    origin: str,
) -> tuple[str, dict[str, Any], bool]:
    """What Kueue does about the failed nodes of ``obj``: the text, the JSON document, and
    whether every failed node is replaced."""
    answer = what_if(snap, obj, args.failed_node, gates, timing=args.failures, origin=origin)
    return failure_text(answer, gates), failure_dict(answer, gates), answer.fits
