"""Render a Workload's answer ("why is it pending?") as text and JSON.

JSON keys are an interface: ``fits``, ``message``, ``podsets[]`` (``name``, ``fits``,
``message``, ``assignment[]`` with ``hostname``/``node``/``count``/``domains``,
``narrowest_fit_now``, ``narrowest_fit_empty``); more may be added, none renamed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from labeler.base.text import table
from labeler.sim.kueue.admit import PodSetResult, WorkloadResult
from labeler.sim.kueue.assign import Mode
from labeler.sim.kueue.gates import DEFAULT_GATES, KUEUE_VERSION, Gates
from labeler.sim.kueue.report import MAX_OUTSIDE_LINES, request_text, stats_dict
from labeler.sim.kueue.tree import Tree


def _key(tree: Tree, level: int | None) -> str | None:
    return None if level is None else tree.keys[level]


def _assignment(tree: Tree, r: PodSetResult) -> list[dict[str, Any]]:
    out = []
    for a in r.outcome.assignment:
        entry: dict[str, Any] = {
            "count": a.count,
            "domains": dict(zip(tree.keys, a.values, strict=True)),
        }
        if tree.hostname_leaves:
            entry = {"hostname": a.values[-1], "node": a.node, **entry}
        out.append(entry)
    return out


def podset_dict(tree: Tree, r: PodSetResult) -> dict[str, Any]:
    ps = r.podset
    job = r.job
    return {
        "name": ps.name,
        "role": r.role or None,
        "group": ps.request.group,
        "count": ps.count,
        "requests": dict(sorted(ps.shape.requests.items())),
        "mode": ps.request.mode,
        "requested_level": ps.request.level,
        "slices": [{"level": k, "size": n} for k, n in ps.request.slices],
        "fits": r.outcome.fits,
        "message": r.outcome.message,
        "reached_by_kueue": r.reached,
        "level": _key(tree, r.outcome.fit_level) if r.outcome.fits and job else None,
        "assignment": _assignment(tree, r),
        "narrowest_fit_now": _key(tree, r.narrowest_now),
        "narrowest_fit_empty": _key(tree, r.narrowest_empty),
        "excluded": stats_dict(r.stats),
    }


def workload_dict(
    tree: Tree,
    results: Sequence[WorkloadResult],
    *,
    flavor: str | None,
    held: int,
    gates: Gates = DEFAULT_GATES,
) -> dict[str, Any]:
    fits = all(w.fits for w in results)
    return {
        "fits": fits,
        "message": next((w.message for w in results if not w.fits), ""),
        "topology": tree.topology_name,
        "flavor": flavor,
        "levels": list(tree.keys),
        "admitted_workloads_holding_capacity": held,
        "nodes_in_topology": sum(len(leaf.members) for leaf in tree.leaves),
        "workloads": [
            {
                "name": w.workload.name,
                "fits": w.fits,
                "message": w.message,
                "podsets": [podset_dict(tree, r) for r in w.podsets],
            }
            for w in results
        ],
        "outside": [{"node": o.node, "reason": o.reason} for o in tree.outside],
        "kueue": kueue_dict(gates),
    }


def _what(tree: Tree, r: PodSetResult) -> str:
    ps = r.podset
    req = ps.request
    text = f"{ps.count} pod(s) of {request_text(ps.shape.requests) or 'no requests'}"
    text += ", unconstrained" if req.mode == Mode.UNCONSTRAINED else f", {req.mode} {req.level}"
    if req.slices:
        text += "; slices: " + ", ".join(f"{n} pods per {k}" for k, n in req.slices)
    if r.role:
        text += f"; {r.role} of group {req.group}"
    return text


def podset_text(tree: Tree, r: PodSetResult) -> list[str]:
    lines = [f"PodSet {r.podset.name}: {_what(tree, r)}"]
    out = r.outcome
    if out.fits:
        where = (
            "spread over several domains"
            if out.spread or out.fit_level is None
            else f"within one {tree.keys[out.fit_level]} domain"
        )
        how = " (balanced placement)" if out.balanced else ""
        lines.append(f"  FITS now, {where}{how}:")
        upper = list(tree.keys[:-1])
        if tree.hostname_leaves:
            rows = [["HOSTNAME", "NODE", "PODS", *upper]]
            rows += [[a.values[-1], a.node, str(a.count), *a.values[:-1]] for a in out.assignment]
        else:
            rows = [[tree.keys[-1], "PODS", *upper]]
            rows += [[a.values[-1], str(a.count), *a.values[:-1]] for a in out.assignment]
        lines += table(rows, indent="    ")
    elif not r.reached:
        lines.append(f"  does not fit ({out.message}); Kueue stopped at an earlier PodSet")
    else:
        lines.append(f"  does NOT fit: {out.message}")
    lines.append(
        f"  Narrowest level that fits now: {_key(tree, r.narrowest_now) or 'none'}; "
        f"on an empty cluster: {_key(tree, r.narrowest_empty) or 'none'}"
    )
    return lines


def workload_text(
    tree: Tree,
    results: Sequence[WorkloadResult],
    *,
    flavor: str | None,
    held: int,
    gates: Gates = DEFAULT_GATES,
) -> str:
    on = f'topology "{tree.topology_name}"' + (f" (ResourceFlavor {flavor})" if flavor else "")
    lines = [f"Levels of {on}: {', '.join(tree.keys)}"]
    if held:
        lines.append(f"Capacity held by {held} admitted Workload(s) is subtracted.")
    for w in results:
        lines.append("")
        lines.append(f"Workload {w.workload.name}:")
        if w.fits:
            lines.append("Verdict: FITS now; every PodSet can be placed.")
        else:
            lines.append("Verdict: does NOT fit now; Kueue keeps the Workload pending with:")
            lines.append(f"  {w.message}")
        for r in w.podsets:
            lines += podset_text(tree, r)
    if tree.outside:
        lines.append(f"Nodes outside the topology, invisible to Kueue ({len(tree.outside)}):")
        for o in tree.outside[:MAX_OUTSIDE_LINES]:
            lines.append(f"  {o.node}: {o.reason}")
        if len(tree.outside) > MAX_OUTSIDE_LINES:
            lines.append(f"  … and {len(tree.outside) - MAX_OUTSIDE_LINES} more (see -o json)")
    lines.append(modelled_line(gates))
    return "\n".join(lines)


def modelled_line(gates: Gates) -> str:
    """Which Kueue the answer models, the gates changed from its defaults, what is not."""
    changed = ", ".join(f"{k}={str(v).lower()}" for k, v in gates.changed.items())
    return (
        f"Modelled: {KUEUE_VERSION}" + (f" with {changed}" if changed else "") + "; not "
        "modelled: ClusterQueue quota and preemption, elastic Workloads, preferred node affinity."
    )


def kueue_dict(gates: Gates) -> dict[str, Any]:
    return {"version": KUEUE_VERSION, "feature_gates_changed": gates.changed}
