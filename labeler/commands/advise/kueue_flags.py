"""``advise``'s Kueue flags: the feature gates and the node failures to simulate.

Kept apart from ``advise.py`` (shared with the other schedulers' flags) and light to
import: building the parser must not load the simulator.
"""

from __future__ import annotations

import argparse

from labeler.base.errors import UsageError
from labeler.base.flags import enum_flag
from labeler.sim.kueue.gates import KUEUE_VERSION, Gates, Timing, gates_help, parse_gates

DESCRIPTION = (
    f"Kueue is modelled as of {KUEUE_VERSION}: its feature gates' defaults are that version's "
    "(--kueue-feature-gates changes them). Not modelled: ClusterQueue quota and preemption, "
    "elastic Workloads (workload slices), preferred node affinity, DRA claims (Kueue's TAS "
    "counts node allocatable only; nodes whose GPUs only DRA ResourceSlices publish are "
    "named after the verdict)."
)


def add_gates_option(g: argparse._ActionsContainer) -> None:
    g.add_argument(
        "--kueue-feature-gates",
        metavar="Gate=true,Other=false",
        help=f"Kueue's feature gates, in its --feature-gates syntax ({KUEUE_VERSION} "
        f"defaults): {gates_help()}. TASNodeFeasibilityForAllLevels is not in this Kueue: "
        "where a topology's lowest level is not the hostname, no per-node filter applies",
    )


def add_kueue_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Kueue")
    add_gates_option(g)
    g.add_argument(
        "--failed-node",
        action="append",
        default=[],
        metavar="NODE",
        help="with an admitted Workload (--workload, or -f of its YAML): this node fails; "
        "show what Kueue does (the replacement node its search chooses, or the eviction). "
        "Repeat for several. Nodes already NotReady, tainted, cordoned or gone, and the "
        "Workload's status.unhealthyNodes, count without it",
    )
    g.add_argument(
        "--failures",
        **enum_flag(Timing),
        default=Timing.TOGETHER,
        help="several failed nodes of one Workload: 'together' fail before Kueue replaced "
        "the first, which its node controller answers by evicting the Workload; 'one-by-one' "
        "each after the previous one was replaced (default: %(default)s)",
    )


def refuse_failed_nodes(args: argparse.Namespace, input_is: str) -> None:
    """--failed-node is Kueue's: a usage error with any other input (``input_is`` names it)."""
    if args.failed_node:
        raise UsageError(
            f"--failed-node needs an admitted Workload: give --workload NS/NAME ({input_is})"
        )


def kueue_gates(args: argparse.Namespace) -> Gates:
    """The gates asked for (UsageError on a bad value, before anything is read)."""
    return parse_gates(getattr(args, "kueue_feature_gates", None))
