"""The Volcano answer as text and JSON.

JSON keys are an interface: ``fits``, ``message``, ``hyperNode``, ``tier``, ``pods[]``
(``name`` as ``namespace/pod``, ``task``, ``node``, ``hyperNode``: every pod Volcano would
bind this cycle), then ``scheduler``, ``podGroup``, ``queue``, ``why``, ``traps``,
``tiers[]``, ``narrowestTierNow``/``narrowestTierEmpty`` and more; keys may be added, none
renamed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from labeler.base.text import a_few, table
from labeler.core.quantity import format_units
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.advice import Advice
from labeler.sim.volcano.hypernodes import TOP, describe_tiers
from labeler.sim.volcano.simulate import Placement
from labeler.sim.volcano.tiers import TierRow

MAX_NODES_SHOWN = 8


def _pods(places: Sequence[Placement]) -> list[dict[str, Any]]:
    return [
        {"name": p.pod, "task": p.task, "node": p.node, "hyperNode": p.hypernode or None}
        for p in places
    ]


def _copies(n: int, limit: int) -> str:
    return f"{n}+" if n >= limit else str(n)


def _tier_dict(r: TierRow) -> dict[str, Any]:
    def side(name: str, n: int) -> dict[str, Any]:
        hn = None if name == TOP or not n else name
        return {"hyperNode": hn, "copies": n, "atLeast": n >= r.limit}

    return {
        "tier": r.tier,
        "tierName": r.name or None,
        "cluster": r.hypernodes == 0,
        "hyperNodes": r.hypernodes,
        "now": side(r.best_now, r.now),
        "empty": side(r.best_empty, r.empty),
    }


def advice_dict(a: Advice) -> dict[str, Any]:
    v, pg = a.verdict, a.podgroup
    nt = pg.network_topology
    now, empty = a.smallest_now(), a.smallest_empty()
    return {
        "scheduler": "volcano",
        "fits": a.fits,
        "message": v.message,
        "hyperNode": v.hypernode or None,
        "tier": v.tier,
        "pods": _pods(v.binds),
        "pipelined": _pods(v.pipelined),
        "podGroup": pg.ref,
        "job": a.gang.origin or None,
        "queue": pg.queue,
        "minAvailable": pg.min_member,
        "pending": a.pending,
        "minResources": None
        if pg.min_resources is None
        else {k: format_units(k, v) for k, v in sorted(pg.min_resources.items())},
        "networkTopology": None
        if nt is None
        else {"mode": nt.mode.value, "highestTierAllowed": nt.highest_tier},
        "why": v.why,
        "traps": a.traps,
        "notes": a.notes,
        "tiers": [_tier_dict(r) for r in a.tiers],
        "narrowestTierNow": now.tier if now else None,
        "narrowestTierEmpty": empty.tier if empty else None,
        "configuration": a.conf.source,
        "hyperNodeSource": a.hypernode_source or None,
    }


def _where(hn: str, tier: int | None) -> str:
    return f"within HyperNode {hn} (tier {tier})" if hn else "across the cluster (no one HyperNode)"


def _placement_lines(places: Sequence[Placement]) -> list[str]:
    by_task: dict[str, list[Placement]] = {}
    for p in places:
        by_task.setdefault(p.task or "-", []).append(p)
    rows = []
    for task, ps in by_task.items():
        hns = sorted({p.hypernode or "(none)" for p in ps})
        rows.append(
            [
                task,
                f"{len(ps)} pod(s)",
                a_few([p.node for p in ps], MAX_NODES_SHOWN),
                f"HyperNode {a_few(hns, 4)}",
            ]
        )
    return table(rows, indent="  ")


def _head(a: Advice) -> list[str]:
    pg, nt = a.podgroup, a.podgroup.network_topology
    origin = f" (from {a.gang.origin})" if a.gang.origin else ""
    lines = [
        f"Volcano: PodGroup {pg.ref}{origin}, queue {pg.queue}, minAvailable {pg.min_member}, "
        f"{a.pending} pending pod(s) of {len(a.gang.tasks)}",
        f"  minResources: {R.describe(pg.min_resources or {})}"
        if pg.min_resources is not None
        else "  minResources: none (the PodGroup always enqueues)",
    ]
    given = a.gang.podgroup.network_topology
    if nt is not None and given is not None:
        said = f" (written: {given.describe()})" if given != nt else ""
        if not a.conf.enabled("network-topology-aware", "hyperNodeGradient"):
            said += "; not enforced: network-topology-aware is off"
        lines.append(f"  network topology as scheduled: {nt.describe()}{said}")
    src = f", {a.hypernode_source}" if a.hypernode_source else ""
    lines.append(f"  HyperNodes: {describe_tiers(a.tree)}{src}")
    return lines


def _verdict_lines(a: Advice) -> list[str]:
    v = a.verdict
    if a.fits and not v.binds:
        return ["FITS: every pod is already placed; nothing is pending"]
    if a.fits:
        lines = [f"FITS: Volcano would bind {len(v.binds)} pod(s) {_where(v.hypernode, v.tier)}"]
        return lines + _placement_lines(v.binds)
    lines = ["DOES NOT FIT: Volcano binds nothing this cycle"]
    if v.pipelined:
        lines.append(
            f"  {len(v.pipelined)} pod(s) would be pipelined: they wait for terminating pods "
            "to release their resources"
        )
    lines += [f"  why: {w}" for w in v.why]
    lines.append(f"  PodGroup condition: {v.message}")
    return lines


def _tier_lines(a: Advice) -> list[str]:
    now, empty = a.smallest_now(), a.smallest_empty()

    def name(r: TierRow | None) -> str:
        if r is None:
            return "none"
        best = r.best_now if r is now else r.best_empty
        label = "the whole cluster" if best == TOP else f"HyperNode {best}"
        return f"tier {r.tier} ({label})"

    lines = [
        f"smallest tier that holds the gang: now {name(now)}; on an empty cluster {name(empty)}"
    ]
    rows = [["tier", "tierName", "HyperNodes", "best now", "copies", "best empty", "copies"]]
    for r in a.tiers:
        rows.append(
            [
                str(r.tier),
                r.name or ("(cluster)" if r.hypernodes == 0 else "-"),
                str(r.hypernodes) if r.hypernodes else "-",
                _best(r.best_now, r.now),
                _copies(r.now, r.limit),
                _best(r.best_empty, r.empty),
                _copies(r.empty, r.limit),
            ]
        )
    title = "copies of this gang the best HyperNode of each tier holds:"
    return [*lines, title, *table(rows, right={0, 2, 4, 6}, indent="  ")]


def _best(name: str, n: int) -> str:
    if not n:
        return "-"
    return "(whole cluster)" if name == TOP else name


def advice_text(a: Advice) -> str:
    lines = _head(a) + _verdict_lines(a)
    if a.traps:
        lines.append("traps:")
        lines += [f"  ! {t}" for t in a.traps]
    lines += _tier_lines(a)
    lines += [f"note: {n}" for n in a.notes]
    lines.append(f"scheduler configuration: {a.conf.source}")
    return "\n".join(lines)
