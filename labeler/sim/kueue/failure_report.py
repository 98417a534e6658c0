"""``advise --failed-node``: what Kueue does, as text and JSON.

JSON keys are an interface: ``fits`` (every failed node of the Workload replaced),
``outcome`` (replaced, evicted, waiting, kept, unaffected), ``message`` (Kueue's),
``failures[]`` (``node``, ``cause``, ``recorded``, ``when``, ``podsets``), ``podsets[]``
(``name``, ``flavor``, ``failed[]`` with ``node``, ``pods``, ``replacement`` — a list of
``{node, count}`` or null — ``searched``, ``candidates``, ``message``; ``assignment``);
more may be added, none renamed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from labeler.base.text import a_few
from labeler.core.hotswap import Path
from labeler.sim.kueue.assign import Mode
from labeler.sim.kueue.failure import (
    FailureAnswer,
    Fate,
)
from labeler.sim.kueue.gates import Gates
from labeler.sim.kueue.replace import Replacement
from labeler.sim.kueue.workload import TopologyRequest
from labeler.sim.kueue.workload_report import kueue_dict, modelled_line

MAX_CANDIDATES = 8
VERDICT = {
    Fate.REPLACED: "REPLACED: Kueue re-admits the Workload with the new assignment (its "
    "status.unhealthyNodes cleared); only the pods of the failed node(s) move.",
    Fate.EVICTED: "EVICTED: Kueue evicts the Workload; it is queued again and placed anew.",
    Fate.WAITING: "NOT REPLACED: the Workload stays admitted with the failed node recorded, its "
    "pods there lost; Kueue retries every scheduling cycle (TASFailedNodeReplacementFailFast "
    "is off).",
    Fate.KEPT: "KEPT AS IS: Kueue keeps the assignment; that is not a replacement.",
    Fate.UNAFFECTED: "UNAFFECTED: no failed node holds a pod of this Workload.",
}


def _searched(r: Replacement, keys: Sequence[str]) -> dict[str, Any] | None:
    if r.domain is None:
        return None
    return {"level": keys[len(r.domain) - 1], "values": list(r.domain)}


def _where(domain: Path | None, keys: Sequence[str], request: TopologyRequest) -> str:
    if domain is not None:
        return f"{keys[len(domain) - 1]}={domain[-1]} ({'/'.join(domain)})"
    if request.mode == Mode.REQUIRED and not request.slices:
        return "the whole flavor (no other pod of the PodSet is left to stay near)"
    if request.slices:
        return "the whole flavor (the lost pods are whole slices, or complete none)"
    return f"the whole flavor (Kueue does not confine a {request.mode} request)"


def failure_dict(answer: FailureAnswer, gates: Gates) -> dict[str, Any]:
    wl = answer.workload
    podsets = []
    for ps in wl.podsets:
        keys = answer.levels[ps.flavor]
        failed = [
            {
                "node": r.failed,
                "pods": r.pods,
                "replacement": [{"node": a.node, "count": a.count} for a in r.outcome.assignment]
                if r.replaced
                else None,
                "searched": _searched(r, keys),
                "candidates": [{"node": n, "free": f} for n, f in r.candidates],
                "message": r.message,
            }
            for r in answer.steps
            if r.podset == ps.podset.name
        ]
        podsets.append(
            {
                "name": ps.podset.name,
                "flavor": ps.flavor,
                "failed": failed,
                "assignment": [
                    {"hostname": values[-1], "count": n}
                    for values, n in answer.assignments.get(ps.podset.name, ps.assignment)
                ],
            }
        )
    return {
        "workload": wl.key,
        "cluster_queue": wl.cluster_queue,
        "fits": answer.fits,
        "outcome": answer.outcome.value,
        "message": answer.message,
        "failures": [
            {
                "node": f.node,
                "cause": f.cause,
                "recorded": f.recorded,
                "when": f.wait or "now",
                "podsets": list(f.podsets),
                "acted_on": f not in answer.ignored,
            }
            for f in answer.failures
        ],
        "podsets": podsets,
        "kueue": kueue_dict(gates),
    }


def failure_text(answer: FailureAnswer, gates: Gates) -> str:
    wl = answer.workload
    flavor_names = ", ".join(sorted({ps.flavor for ps in wl.podsets}))
    lines = [
        f"Workload {wl.key} (ClusterQueue {wl.cluster_queue or '?'}, ResourceFlavor "
        f"{flavor_names}): {len(wl.podsets)} PodSet(s) on "
        f"{len({n for ps in wl.podsets for n in ps.nodes})} node(s)."
    ]
    if answer.failures:
        lines.append("Failed nodes, in the order Kueue meets them:")
        for f in answer.failures:
            on = f"holds pods of {', '.join(f.podsets)}" if f.podsets else "holds none of its pods"
            when = f"Kueue marks it failed {f.wait}" if f.wait else "failed now"
            if f in answer.ignored:
                when = "Kueue does not mark it failed (TASFailedNodeReplacement off)"
            lines.append(f"  {f.node}: {f.cause}; {on}; {when}")
    for r in answer.steps:
        ps = next(p for p in wl.podsets if p.podset.name == r.podset)
        keys = answer.levels[ps.flavor]
        lines.append(f"PodSet {r.podset}: {r.pods} pod(s) on {r.failed}")
        lines.append(f"  searched {_where(r.domain, keys, ps.podset.request)}")
        lines.append("  free pod slots for its pods there, most first:")
        free = [f"{n} ({f})" for n, f in r.candidates]
        lines.append(f"    {a_few(free, MAX_CANDIDATES) if free else 'none'}")
        if r.replaced:
            got = ", ".join(f"{a.node or a.values[-1]} ({a.count})" for a in r.outcome.assignment)
            lines.append(f"  replaced by {got}")
        else:
            lines.append(f"  no replacement: {r.message}")
    lines.append(f"Verdict: {VERDICT[answer.outcome]}")
    if answer.message:
        lines.append(f"  {answer.message}")
    lines.append(modelled_line(gates))
    return "\n".join(lines)
