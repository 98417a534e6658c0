"""Render ``advise`` and ``domains`` results as text for people and JSON for scripts.

The JSON keys are an interface (scripts depend on them): ``fits``, ``message``, ``level``,
``assignment`` (``node``, ``count``, ``domains``), ``narrowest_fit_now``,
``narrowest_fit_empty``; more keys may be added, none renamed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from labeler.base.prog import command
from labeler.base.text import left_out, table
from labeler.core.model import Topology
from labeler.core.quantity import format_units
from labeler.sim.kueue.advice import PODGROUP_API_VERSION, Advice, level_key, level_name
from labeler.sim.kueue.assign import Mode

if TYPE_CHECKING:  # advise prints no inventory: it need not load the module
    from labeler.sim.kueue.inventory import LevelInfo
    from labeler.sim.kueue.tree import ExclusionStats, Outside

MAX_OUTSIDE_LINES = 20


def _key(topology: Topology, level: int | None) -> str | None:
    return None if level is None else level_key(topology, level)


def _label(topology: Topology, level: int | None) -> str:
    if level is None:
        return "none"
    return f"{level_name(topology, level)} ({level_key(topology, level)})"


def stats_dict(stats: ExclusionStats) -> dict[str, Any]:
    return {
        "total_nodes": stats.total_nodes,
        "taints": dict(sorted(stats.taints.items())),
        "node_selector": stats.node_selector,
        "resources": dict(sorted(stats.resources.items())),
    }


def advice_dict(topology: Topology, advice: Advice) -> dict[str, Any]:
    keys = topology.kueue_levels()
    out = advice.outcome
    return {
        "fits": out.fits,
        "message": out.message,
        "mode": advice.job.mode,
        "requested_level": _key(topology, advice.job.level),
        "pods": advice.job.count,
        "slices": [
            {"level": level_key(topology, s.level), "size": s.size} for s in advice.job.slices
        ],
        "level": _key(topology, advice.level) if out.fits else None,
        "assignment": [
            {"node": a.node, "count": a.count, "domains": dict(zip(keys, a.values, strict=True))}
            for a in out.assignment
        ],
        "narrowest_fit_now": _key(topology, advice.narrowest_now),
        "narrowest_fit_empty": _key(topology, advice.narrowest_empty),
        "suggested_level": _key(topology, advice.suggested_level),
        "annotations": dict(advice.annotations),
        "volcano": advice.volcano,
        "volcano_legacy": advice.volcano_legacy,
        "ascend_annotations": dict(advice.ascend) if advice.ascend else None,
        "podgroup": advice.podgroup,
        "nodes_in_topology": advice.nodes_in_tree,
        "excluded": stats_dict(advice.stats),
        "outside": [{"node": o.node, "reason": o.reason} for o in advice.outside],
        "balanced_placement": out.balanced,
    }


def _outside_lines(outside: Sequence[Outside]) -> list[str]:
    if not outside:
        return []
    lines = [f"Nodes outside the topology, invisible to Kueue ({len(outside)}):"]
    for o in outside[:MAX_OUTSIDE_LINES]:
        lines.append(f"  {o.node}: {o.reason}")
    lines += left_out(len(outside), MAX_OUTSIDE_LINES, "see -o json")
    return lines


def _yaml_block(doc: Mapping[str, Any], indent: str = "  ") -> list[str]:
    text = yaml.safe_dump(dict(doc), sort_keys=False, default_flow_style=False)
    return [indent + line for line in text.splitlines()]


def request_text(requests: Mapping[str, int]) -> str:
    return ", ".join(f"{r}={format_units(r, v)}" for r, v in sorted(requests.items()))


def advice_text(topology: Topology, advice: Advice, requests: Mapping[str, int]) -> str:
    job = advice.job
    out = advice.outcome
    what = f"{job.count} pod(s) of {request_text(requests)}"
    if job.mode == Mode.UNCONSTRAINED:
        what += ", unconstrained"
    else:
        what += f", {job.mode} {_label(topology, job.level)}"
    if job.slices:
        what += "; slices: " + ", ".join(
            f"{s.size} pods per {level_name(topology, s.level)}" for s in job.slices
        )
    lines = [f"Job: {what}"]
    if out.fits:
        if advice.level is None:
            where = "spread over several top-level domains"
        else:
            where = f"within one {_label(topology, advice.level)} domain"
        how = " (balanced placement: TASBalancedPlacement)" if out.balanced else ""
        lines.append(f"Verdict: FITS now, {where}{how}.")
        keys = topology.kueue_levels()
        header = ["NODE", "PODS", *(level_name(topology, i) for i in range(len(keys) - 1))]
        rows = [header] + [[a.node, str(a.count), *a.values[:-1]] for a in out.assignment]
        lines.append("NodePosition:")
        lines += table(rows, indent="  ")
    else:
        lines.append("Verdict: does NOT fit now; Kueue keeps the workload pending with:")
        lines.append(f"  {out.message}")
    lines += _outside_lines(advice.outside)
    lines.append(
        f"Narrowest level that fits now:          {_label(topology, advice.narrowest_now)}"
    )
    lines.append(
        f"Narrowest level on an empty cluster:    {_label(topology, advice.narrowest_empty)}"
    )
    if not out.fits:
        lines += _hint(topology, advice)
    if advice.annotations:
        heading = "Kueue pod-template annotations"
        if advice.suggested_level is not None and advice.suggested_level != job.level:
            heading += f" (suggested: {level_name(topology, advice.suggested_level)})"
        lines.append(heading + ":")
        lines += _yaml_block({"annotations": dict(advice.annotations)})
    if advice.volcano is not None and advice.volcano_legacy is not None:
        if "highestTierName" in advice.volcano["networkTopology"]:
            lines.append("Volcano Job spec (Volcano >= 1.14, static or discovered HyperNodes):")
            lines += _yaml_block(advice.volcano)
            legacy = advice.volcano_legacy["networkTopology"]
            lines.append(
                f"  (Volcano < 1.14: highestTierAllowed: {legacy['highestTierAllowed']} "
                "instead of highestTierName)"
            )
        else:
            lines.append(
                "Volcano Job spec (tier number: the same on static and discovered HyperNodes):"
            )
            lines += _yaml_block(advice.volcano)
    if advice.podgroup is not None:
        lines.append(f"kube-scheduler PodGroup spec ({PODGROUP_API_VERSION}, Kubernetes 1.37):")
        lines += _yaml_block(advice.podgroup)
        if job.mode == Mode.PREFERRED:
            lines.append("  (kube-scheduler has no preferred mode: this constraint is required)")
    if advice.ascend:
        lines.append("Ascend multi-level job annotations (ascend-for-volcano):")
        lines += _yaml_block({"annotations": dict(advice.ascend)})
    return "\n".join(lines)


def _hint(topology: Topology, advice: Advice) -> list[str]:
    if advice.narrowest_now is not None:
        return [
            f"Hint: it fits now if you relax the request to "
            f"{level_name(topology, advice.narrowest_now)} (annotations below)."
        ]
    if advice.narrowest_empty is not None:
        return [
            "Hint: running pods hold the capacity; it fits within one "
            f"{level_name(topology, advice.narrowest_empty)} once they finish "
            "(or are preempted)."
        ]
    if advice.nodes_in_tree == 0:
        return [
            "Hint: no node is in the topology: every node lacks a level label or the flavor's "
            "node labels, or is not Ready (see above). Label the nodes first (the agent, or "
            f"'{command('apply')}'), then ask again."
        ]
    return [
        "Hint: it does not fit even on an empty cluster: fewer or smaller pods, another "
        "flavor, or more nodes (check the nodes outside the topology and the exclusions)."
    ]


def inventory_dict(
    topology: Topology, levels: Sequence[LevelInfo], pods: int | None
) -> dict[str, Any]:
    return {
        "pods": pods,
        "levels": [
            {
                "level": li.key,
                "name": level_name(topology, li.level),
                "domains": [
                    {
                        "domain": d.value,
                        "path": list(d.values),
                        "nodes": list(d.nodes),
                        "total": d.total,
                        "free": d.free,
                        "jobs": d.jobs,
                    }
                    for d in li.domains
                ],
            }
            for li in levels
        ],
    }


def inventory_text(
    topology: Topology,
    levels: Sequence[LevelInfo],
    pods: int | None,
    stats: ExclusionStats,
    outside: Sequence[Outside],
) -> str:
    lines: list[str] = []
    for li in levels:
        lines.append(f"{level_name(topology, li.level)} ({li.key}): {len(li.domains)} domain(s)")
        header = ["DOMAIN", "NODES", "TOTAL", "FREE"]
        if pods:
            header.append(f"JOBS×{pods}")
        rows = [header]
        for d in li.domains:
            row = ["/".join(d.values), str(len(d.nodes)), str(d.total), str(d.free)]
            if pods:
                row.append("-" if d.jobs is None else str(d.jobs))
            rows.append(row)
        lines += table(rows, indent="  ")
    if stats.any:
        lines.append(
            f"Of {stats.total_nodes} nodes in the topology, these take none of the pods now: "
            f"{stats.reasons()}"
        )
    lines += _outside_lines(outside)
    return "\n".join(lines)
