"""The audit report and the job placement as tables for people (the JSON forms are
AuditReport.to_json and JobPlacement.to_json)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labeler.audit.jobview import JobPlacement
from labeler.base.text import a_few, left_out, table
from labeler.core.check import NodeState
from labeler.core.hotswap import HotSwapView, SwapState
from labeler.core.states import AuditReport

MAX_LISTED = 20

_MEANING = {
    NodeState.LABELED: "every level label present, nesting consistent",
    NodeState.PARTIAL: "some level labels missing: Kueue TAS ignores the node",
    NodeState.UNLABELED: "no level label at all: invisible to topology-aware scheduling",
    NodeState.INCONSISTENT: "all labels present, but a value sits under two parents",
}


def _more(total: int, limit: int) -> list[str]:
    """The closing lines of a capped section: what was left out, then a blank line."""
    return [*left_out(total, limit), ""]


def _per_node(keys: Mapping[str, Sequence[str]], limit: int) -> list[str]:
    """An indented two-column section, node → its keys, first ``limit`` nodes by name."""
    items = sorted(keys.items())
    rows = [[node, ", ".join(names)] for node, names in items[:limit]]
    return table(rows, indent="  ") + _more(len(items), limit)


def render_table(report: AuditReport, *, limit: int = MAX_LISTED) -> str:
    lines = [f"profile {report.profile}: {report.nodes} node(s) in scope ({report.scope})", ""]
    lines += _states(report)
    if report.accelerators:
        lines.append("Accelerators Kueue cannot see (on partial + unlabeled nodes):")
        rows = [["RESOURCE", "UNUSABLE", "IN SCOPE"]]
        rows += [
            [r, str(report.unusable_accelerators.get(r, 0)), str(total)]
            for r, total in report.accelerators.items()
        ]
        lines += table(rows, right={1, 2}, indent="  ")
        lines.append("")
    lines += _problems(report, limit)
    if report.foreign:
        lines.append("Foreign labels (set by another tool or by hand; not maintained by us):")
        lines += _per_node(report.foreign, limit)
    lines += _domains(report, limit)
    lines.append(_verdict(report))
    return "\n".join(lines)


def _states(report: AuditReport) -> list[str]:
    """The table of nodes per state, and the foreign ones among them."""
    counts = report.counts()
    rows = [["STATE", "NODES", "MEANING"]]
    rows += [[s, str(counts[s]), _MEANING[s]] for s in NodeState]
    rows.append(
        [
            "foreign",
            str(len(report.foreign)),
            "level labels not set by topology-labeler (counted in the states above)",
        ]
    )
    return [*table(rows, right={1}), ""]


def _problems(report: AuditReport, limit: int) -> list[str]:
    """What keeps nodes from being labeled: missing levels, no labels, nesting, the rest."""
    lines: list[str] = []
    if report.missing:
        lines.append("Partial nodes (levels missing):")
        lines += _per_node(report.missing, limit)
    if report.states[NodeState.UNLABELED]:
        lines.append(f"Unlabeled nodes: {a_few(report.states[NodeState.UNLABELED], limit)}")
        lines.append("")
    if report.nesting:
        lines.append("Nesting violations (inconsistent nodes):")
        for v in report.nesting:
            parent = report.check.parent_level(v)
            lines.append(
                f"  {v.level.name} {v.value!r} sits under {len(v.parents)} {parent.name}s "
                f"({', '.join(v.parents)}): {a_few(v.nodes, limit)}"
            )
        lines.append("")
    other = list(report.check.invalid)
    if report.check.empty_tree_label:
        other.append(
            f"empty {report.topology.tree_label} (ascend-for-volcano rejects the node): "
            + a_few(report.check.empty_tree_label, limit)
        )
    if other:
        lines.append("Other problems:")
        lines += [f"  {p}" for p in other[:limit]]
        lines += _more(len(other), limit)
    return lines


def _domains(report: AuditReport, limit: int) -> list[str]:
    """Nodes per domain at each level; the domains themselves when there are few."""
    lines = ["Domains per level (nodes per domain):"]
    rows = [["LEVEL", "KEY", "DOMAINS", "MIN", "MEDIAN", "MAX"]]
    for lv in report.topology.levels:
        stats = report.check.size_stats(lv.key)
        if stats is None:
            rows.append([lv.name, lv.key, "0", "-", "-", "-"])
        else:
            rows.append(
                [
                    lv.name,
                    lv.key,
                    str(stats.domains),
                    str(stats.min),
                    f"{stats.median:g}",
                    str(stats.max),
                ]
            )
    lines += table(rows, right={2, 3, 4, 5}, indent="  ")
    for lv in report.topology.levels:
        sizes = sorted(report.check.domain_sizes.get(lv.key, {}).items())
        if sizes and len(sizes) <= limit:
            lines.append(f"  {lv.name}: " + ", ".join(f"{v} ({n})" for v, n in sizes))
    lines.append("")
    return lines


def _verdict(report: AuditReport) -> str:
    if report.nodes == 0:
        return "verdict: no node in scope; nothing was audited (check the scope above)"
    if report.ok:
        return "verdict: every node in scope is usable by topology-aware schedulers"
    return (
        f"verdict: {report.nodes - report.counts()[NodeState.LABELED]} of {report.nodes} "
        "node(s) in "
        "scope are not fully labeled"
    )


def render_placement(view: JobPlacement, *, all_namespaces: bool) -> str:
    """One row per pod (its node and its domain at every level), then the verdict."""
    if not view.pods:
        return view.verdict()
    levels = view.topology.levels
    head = (["NAMESPACE"] if all_namespaces else []) + ["POD", "PHASE", "NODE"]
    rows = [head + [lv.name.upper() for lv in levels]]
    for p in view.pods:
        node = p.node or "<pending>"
        if p.node and not p.node_found:
            node += " (gone)"
        cells = [p.namespace] if all_namespaces else []
        cells += [p.name, p.phase, node]
        cells += ["-" if p.pending else (v if v is not None else "<none>") for v in p.values]
        rows.append(cells)
    return "\n".join([*table(rows), "", view.verdict()])


def render_hotswap(view: HotSwapView, *, limit: int = MAX_LISTED) -> str:
    """Per ClusterQueue, the admitted TAS Workloads Kueue could re-place after one node
    failure, and the ones it would evict (with the domain that has no spare node)."""
    lines = [
        "Hot swap: could Kueue replace any one failed node of each admitted TAS Workload?",
        f"  ({view.source})",
    ]
    if not view.workloads:
        lines.append("  no admitted TAS Workload")
    else:
        rows = [["CLUSTERQUEUE", "REPLACEABLE", "NOT REPLACEABLE", "EXEMPT"]]
        rows += [
            [
                cq,
                str(c[SwapState.REPLACEABLE]),
                str(c[SwapState.NOT_REPLACEABLE]),
                str(c[SwapState.EXEMPT]),
            ]
            for cq, c in view.by_cluster_queue().items()
        ]
        lines += table(rows, right={1, 2, 3}, indent="  ")
    risky = view.at_risk
    if risky:
        evicts = "evict" if view.fail_fast else "strand (fail-fast off)"
        lines.append(f"One node failure would {evicts} {len(risky)} Workload(s):")
        for w in risky[:limit]:
            lines.append(f"  {w.key} (ClusterQueue {w.cluster_queue}, flavor {w.flavor}):")
            for n in w.nodes:
                if n.replaceable:
                    continue
                where = f"{n.domain_level}={n.domain[-1]}" if n.domain else "the whole flavor"
                lines.append(f"    {n.node}: {n.pods} pod(s) of {n.podset}; in {where}: {n.reason}")
        lines += left_out(len(risky), limit)
    for w in view.workloads:
        if w.state == SwapState.EXEMPT:
            lines.append(f"  exempt: {w.key}: {w.note}")
    lines += [f"  could not judge: {p}" for p in view.problems[:limit]]
    return "\n".join(lines)
