"""``advise --html``: what the map draws over the nodes for one advice.

Everything comes from the simulator: the pods per node are the advice's assignment, the
highlighted domain is the one holding that assignment at the advice's level, and for a job
that does not fit the best domain is the one with the most free pod slots at the requested
level (the ``domains`` inventory's count), with what keeps each other node from taking a
pod (full, a taint, outside the topology).
"""

from __future__ import annotations

from collections import Counter

from labeler.core.model import Topology
from labeler.core.overlay import JobOverlay
from labeler.sim.kueue.advice import Advice, level_name
from labeler.sim.kueue.inventory import inventory
from labeler.sim.kueue.tree import Tree


def job_overlay(topology: Topology, tree: Tree, advice: Advice) -> JobOverlay:
    outcome = advice.outcome
    narrowest = len(topology.levels) - 1
    now = advice.now
    blocked = {
        leaf.node.name: why
        for leaf, why in zip(tree.leaves, now.blocked, strict=True)
        if why and leaf.node is not None
    }
    for o in tree.outside:
        blocked[o.node] = f"outside the topology: {o.reason}"
    domain: tuple[str, ...] | None = None
    if outcome.fits:
        role = "placement"
        if advice.level is not None and outcome.assignment:
            domain = outcome.assignment[0].values[: min(advice.level, narrowest) + 1]
        where = (
            "spread over several top-level domains"
            if advice.level is None
            else f"within one {level_name(topology, advice.level)} domain"
        )
        headline = f"FITS now: {outcome.total} pod(s) {where}"
    else:
        role = "best"
        level = min(advice.job.level if advice.job.level is not None else 0, narrowest)
        levels = inventory(tree, now, advice.empty)
        candidates = levels[level].domains if level < len(levels) else ()
        if candidates:
            best = max(candidates, key=lambda d: d.free)  # first of equals: sorted by path
            domain = best.values
            headline = (
                f"does NOT fit now ({advice.job.count} pod(s)); best "
                f"{topology.levels[level].name} {best.value} has {best.free} free pod slot(s)"
            )
        else:
            headline = f"does NOT fit now ({advice.job.count} pod(s)); no domain in the topology"
    kinds = Counter(_kind(why) for why in blocked.values())
    notes = tuple(f"{n} node(s) {kind}" for kind, n in sorted(kinds.items()))
    return JobOverlay(
        scheduler="Kueue",
        fits=outcome.fits,
        headline=headline,
        message="" if outcome.fits else outcome.message,
        pods={a.node: a.count for a in outcome.assignment},
        domain=domain,
        domain_role=role,
        blocked=blocked,
        notes=notes,
    )


def _kind(why: str) -> str:
    if why.startswith("full"):
        return "full"
    if why.startswith("taint"):
        return "tainted"
    if why.startswith("outside"):
        return "outside the topology"
    return "not matching the nodeSelector"
