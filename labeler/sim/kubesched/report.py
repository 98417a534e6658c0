"""``advise -f`` for PodGroups: the answer as text for people and JSON for scripts.

JSON keys (an interface, as for the other schedulers): ``scheduler``, ``fits`` (every
pending pod would be bound now), ``message`` (kube-scheduler's message for the first pod
left pending), ``pods`` (``name`` ns/pod, ``node``, ``group``, ``message``, ``tied_nodes``:
when several nodes had the pod's top score, all of them in name order, ``node`` among
them, for kube-scheduler takes one of them at random; empty otherwise) and ``groups``
(per group: ``kind``, ``name``, ``policy``, ``min_count``, ``topology_key``, ``domain``,
``fits``, ``message``, ``note`` (our words where the scheduler's message does not say why),
``alternatives`` (other messages kube-scheduler may write in place of ``message``: it
meets the pods already running in no set order),
``tie``, ``again`` (for a root that fitted with pods left over, the cycle kube-scheduler
runs at once for them, in the same form), ``placements`` (each with its ``scores``:
``PodGroupPodsCount``, ``NodeResourcesFit`` and ``total``; and when none is feasible,
``pods``: per pending pod the messages it may end with if kube-scheduler reports that
placement, as it may report any of them), ``children``).
"""

from __future__ import annotations

from typing import Any

from labeler.base.text import table
from labeler.sim.kubesched.results import GroupResult, Placement
from labeler.sim.kubesched.schedule import Advice

SCHEDULER = "kube-scheduler"


def _placement(p: Placement) -> dict[str, Any]:
    return {
        "domain": p.domain,
        "nodes": p.nodes,
        "feasible": p.feasible,
        "message": p.message,
        "scores": dict(p.scores),
        "pods": {pod: list(said) for pod, said in p.pods.items()},
    }


def _group(r: GroupResult) -> dict[str, Any]:
    g = r.group
    return {
        "kind": g.kind,
        "namespace": g.namespace,
        "name": g.name,
        "policy": g.policy,
        "min_count": g.min_count,
        "topology_key": g.key,
        "domain": None if g.key is None or r.domain is None else {g.key: r.domain},
        "fits": r.ok,
        "message": r.message,
        "note": r.note,
        "alternatives": list(r.alternatives),
        "tie": r.tie,
        "placements": [_placement(p) for p in r.placements],
        "children": [_group(c) for c in r.children],
        "again": None if r.again is None else _group(r.again),
    }


def advice_dict(advice: Advice) -> dict[str, Any]:
    return {
        "scheduler": SCHEDULER,
        "fits": advice.fits,
        "message": advice.message,
        "pods": [
            {
                "name": p.pod.ref,
                "node": p.node,
                "group": p.pod.group,
                "message": p.message,
                "tied_nodes": list(p.tied),
            }
            for p in advice.pods
        ],
        "groups": [_group(r) for r in advice.results],
    }


def _count(r: GroupResult) -> str:
    g = r.group
    if g.gang:
        what = "minGroupCount" if g.kind == "CompositePodGroup" else "minCount"
        return f"gang, {what} {g.min_count}"
    return "basic"


def _group_lines(r: GroupResult, indent: str) -> list[str]:
    g = r.group
    head = f"{indent}{g.kind} {g.namespace}/{g.name} ({_count(r)}"
    head += f", topology {g.key})" if g.key else ", no topology constraint)"
    lines = [head + ":"]
    if r.ok and g.key is not None and r.domain is not None:
        where = f"{indent}  domain: {g.key}={r.domain}"
        feasible = [p for p in r.placements if p.feasible]
        if len(feasible) > 1:
            best = max(feasible, key=lambda p: p.scores.get("total", 0))
            where += f" (best score {best.scores.get('total')} of {len(feasible)} feasible"
            where += (
                " placements; a tie, which kube-scheduler breaks at random)"
                if r.tie
                else " placements)"
            )
        lines.append(where)
    elif r.ok:
        lines.append(f"{indent}  placed on any nodes of its parent's domain")
    if r.message:
        label = "pending" if not r.ok else "note"
        lines.append(f"{indent}  {label}: {r.message}")
    if r.note:
        lines.append(f"{indent}  why: {r.note}")
    if not r.ok and r.children and r.placements and g.key is not None:
        lines.append(f"{indent}  in the first placement tried, {g.key}={r.placements[0].domain}:")
    for child in r.children:
        lines += _group_lines(child, indent + "  ")
    cycle = r.again
    while cycle is not None:
        said = "binds more pods" if cycle.ok else cycle.message
        lines.append(
            f"{indent}  pods left over: kube-scheduler tries them again at once "
            f"(a group that fitted goes straight back to the queue): {said}"
        )
        cycle = cycle.again
    return lines


def advice_text(advice: Advice) -> str:
    if advice.fits:
        lines = ["Verdict: FITS now: kube-scheduler would bind every pending pod."]
    else:
        lines = [
            "Verdict: does NOT fit now; kube-scheduler leaves pods pending with:",
            f"  {advice.message}",
        ]
    for r in advice.results:
        lines += _group_lines(r, "")
    rows = [["POD", "GROUP", "NODE"]]
    why: list[str] = []
    for p in advice.pods:
        rows.append([p.pod.ref, p.pod.group, p.node or "-"])
        if not p.node:
            why.append(f"  {p.pod.ref}: {p.message}")
    lines.append("Pods:")
    lines += table(rows, indent="  ")
    if why:
        lines.append("Why not:")
        lines += why
    lines += _tie_lines(advice)
    return "\n".join(lines)


def _tie_lines(advice: Advice) -> list[str]:
    """The pods whose node was one of several of equal score: kube-scheduler draws."""
    tied = [p for p in advice.pods if p.node and p.tied]
    if not tied:
        return []
    lines = [
        "Node ties (kube-scheduler picks at random among nodes of equal score, so its node "
        "for these pods, and for the pods after them, may differ from the one shown):"
    ]
    for p in tied:
        lines.append(
            f"  {p.pod.ref}: {p.node} shown; kube-scheduler picks at random among "
            f"{len(p.tied)} equal nodes: {', '.join(p.tied)}"
        )
    return lines
