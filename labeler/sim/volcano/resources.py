"""Volcano's resource arithmetic on ``{name: units}`` maps (``pkg/scheduler/api/resource_info.go``).

Units are the project's (``labeler.core.quantity``: milli-CPU, bytes, whole counts); Volcano
keeps milli-units for scalars, which changes no comparison. What matters is which dimensions
each comparison looks at, and Volcano uses three rules:

- ``insufficient`` (``LessEqualWithResourcesName``, Zero default): cpu and memory always,
  then every scalar the request names; a scalar the other side lacks counts as 0. This is
  the node fit check, so a pod asking for ``nvidia.com/gpu`` never fits a node without it.
- ``over_in_requested`` (``LessEqualWithDimensionAndResourcesName``): only the dimensions
  the request is positive in. Queue quota checks use it.
- ``less_equal`` (``LessEqual``) with a Zero or Infinity default for missing scalars.

``pods`` is no request dimension: a task asks for no ``pods``; the node's pod count is a
predicate of its own (``predicates``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from labeler.core.quantity import CPU, PODS, format_units

MEMORY = "memory"
NATIVE = (CPU, MEMORY)
Res = Mapping[str, int]


def is_scalar(name: str) -> bool:
    """``IsScalarResourceName``: extended (a domain other than ``kubernetes.io``, not a
    ``requests.`` quota name), ``*kubernetes.io/`` prefixed, ``hugepages-*`` or
    ``attachable-volumes-*``; never a ``count/`` quota (``IsCountQuota``)."""
    if name.startswith("count/"):
        return False
    if "kubernetes.io/" in name or name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    return "/" in name and not name.startswith("requests.")


def scheduler_view(rl: Res) -> dict[str, int]:
    """The names ``NewResource`` reads from a resource list: cpu, memory, ``pods``,
    ``ephemeral-storage`` and scalars. A PodGroup's ``minResources`` as the job controller
    writes it also holds quota names (``count/pods``, ``requests.cpu``,
    ``requests.nvidia.com/gpu``), which the scheduler drops."""
    keep = (*NATIVE, PODS, "ephemeral-storage")
    return {k: v for k, v in rl.items() if k in keep or is_scalar(k)}


def add(a: Res, b: Res) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def sub(a: Res, b: Res) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return out


def total(items: Iterable[Res]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in items:
        for k, v in r.items():
            out[k] = out.get(k, 0) + v
    return out


def is_empty(r: Res) -> bool:
    """``Resource.IsEmpty``: nothing positive (a best-effort pod)."""
    return all(v <= 0 for k, v in r.items() if k != PODS)


def insufficient(request: Res, available: Res) -> list[str]:
    """The resources ``request`` needs more of than ``available`` has, cpu and memory first
    (Volcano's order; the scalars it visits in map order, here sorted)."""
    out = [k for k in NATIVE if request.get(k, 0) > available.get(k, 0)]
    out += sorted(
        k for k, v in request.items() if k not in NATIVE and k != PODS and v > available.get(k, 0)
    )
    return out


def order(request: Res) -> tuple[tuple[str, int], ...]:
    """The request in the order ``insufficient`` checks it: cpu and memory (always), then
    the other resources it names, sorted; ``pods`` never."""
    rest = sorted((k, v) for k, v in request.items() if k not in NATIVE and k != PODS)
    return ((CPU, request.get(CPU, 0)), (MEMORY, request.get(MEMORY, 0)), *rest)


def over_in_requested(
    used: Mapping[str, float], limit: Mapping[str, float], request: Res
) -> list[str]:
    """Dimensions where ``used`` exceeds ``limit``, looking only at those ``request`` is
    positive in; a dimension ``limit`` lacks is 0 (so any use of it is over)."""
    return [
        k
        for k in (*NATIVE, *sorted(k for k in request if k not in NATIVE))
        if request.get(k, 0) > 0 and used.get(k, 0) > limit.get(k, 0)
    ]


def less_equal(a: Res, b: Res, *, infinity: bool = False) -> bool:
    """``a <= b`` in every dimension of ``a`` (cpu and memory always); a scalar ``b`` lacks
    is 0, or unbounded with ``infinity``; with ``infinity`` every scalar of ``b`` must also
    be in ``a`` (Volcano's rule for that default)."""
    if any(a.get(k, 0) > b.get(k, 0) for k in NATIVE):
        return False
    if infinity and any(k not in a for k in b if k not in NATIVE):
        return False
    for k, v in a.items():
        if k in NATIVE:
            continue
        if k not in b:
            if infinity:
                continue
            if v > 0:
                return False
        elif v > b[k]:
            return False
    return True


def exceeded(a: Res, b: Res) -> dict[str, int]:
    """``ExceededPart``: what ``a`` has beyond ``b``, never negative."""
    keys = set(a) | set(b)
    return {k: max(a.get(k, 0) - b.get(k, 0), 0) for k in keys if a.get(k, 0) > b.get(k, 0)}


def describe(r: Res) -> str:
    """``cpu: 4, memory: 16Gi, nvidia.com/gpu: 8`` for messages (zero entries left out)."""
    keys = [k for k in NATIVE if r.get(k)] + sorted(k for k in r if k not in NATIVE and r[k])
    return ", ".join(f"{k}: {format_units(k, r[k])}" for k in keys) or "nothing"
