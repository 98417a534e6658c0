"""``advise`` and ``domains``: would a job fit, where, and at which level.

The command's one entry: the flags of both commands, and ``run_advise``, which hands the
input to the advisor of the scheduler it names. ``input`` reads the -f file once and says
which scheduler it means; one module per scheduler answers: ``kueue`` (a Workload, Job,
JobSet or LeaderWorkerSet; ``kueue_failure`` its failed nodes, ``kueue_flags`` Kueue's
flags), ``kueue_podset`` (the flag form's single PodSet, and ``domains``), ``volcano`` and
``kubesched``. Parsing, reading and printing only: the simulations live in
``labeler.sim``.
"""

from __future__ import annotations

import argparse
from typing import Any

from labeler.base.errors import Exit
from labeler.commands._base import (
    PROFILE_HELP,
    add_command,
    add_dra_driver,
    add_profile,
    add_report_format,
    add_source,
    add_tree_name,
    add_volcano_version,
)
from labeler.commands.advise import kueue_podset
from labeler.commands.advise.kueue_flags import DESCRIPTION as KUEUE_DESCRIPTION
from labeler.commands.advise.kueue_flags import add_kueue_options, refuse_failed_nodes
from labeler.sim.kubesched import KUBERNETES as KUBE_SCHEDULER_VERSION

_ADVISE_EXITS = {
    Exit.OK: "the job fits (with failed nodes: Kueue replaces every one)",
    Exit.INCOMPLETE: "simulated: the job does not fit now (with failed nodes: some "
    "failed node is not replaced)",
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(sub, common, "advise", exits=_ADVISE_EXITS)
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
    add_kueue_options(p)  # Kueue's feature gates and node failures (kueue_flags.py)
    # --- Volcano ---
    from labeler.commands.advise.volcano import add_options as volcano_options

    volcano_options(p)
    _podset_options(p)
    p.add_argument(
        "--html", metavar="FILE", help="also write the topology map with this placement drawn"
    )
    add_volcano_version(
        p,
        "Volcano the job runs on: before 1.14 the stanza uses highestTierAllowed (and Volcano "
        "inputs lose highestTierName, partitions, sub-groups)",
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
    d.set_defaults(handler=kueue_podset.run_domains)


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


# --- commands ----------------------------------------------------------------------------


def run_advise(args: argparse.Namespace) -> int:
    """The scheduler the input names (``input.choose``: -f is read once there) and its
    advisor, a module beside this one, handed the file's objects; without an object, Kueue's
    advisor places the single PodSet of the flags (``kueue_podset``)."""
    from labeler.commands.advise.input import Asked, choose

    scheduler, manifest = choose(args)
    # --failed-node needs an admitted Workload
    if scheduler is Asked.FLAGS:
        refuse_failed_nodes(args, "the flags describe a new PodSet")
    elif scheduler is not Asked.KUEUE:
        refuse_failed_nodes(args, f"the input is {scheduler}'s")
    if scheduler is Asked.VOLCANO:
        from labeler.commands.advise import volcano

        return volcano.run(args, manifest)
    # only a file is kube-scheduler's
    if scheduler is Asked.KUBE_SCHEDULER and manifest is not None:
        from labeler.commands.advise import kubesched

        return kubesched.run(args, manifest)
    # a Workload, or the Job, JobSet or LeaderWorkerSet it is made from
    if scheduler is Asked.KUEUE:
        from labeler.commands.advise import kueue

        return kueue.run(args, manifest)
    return kueue_podset.run(args)
