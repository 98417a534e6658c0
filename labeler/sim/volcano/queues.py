"""A job's queue: may its PodGroup enqueue, may its tasks be allocated, is the queue overused.

Three plugins decide, each as its code does (flat queues; hierarchical ``capacity`` and
DRA quotas are not modelled):

- ``proportion``: every queue with jobs gets a *deserved* share of the cluster, its weight's
  part, filled up to what its jobs request and capped by its real capability (capability,
  or the cluster minus the other queues' guarantees), never below its guarantee. A PodGroup
  enqueues when its ``minResources`` plus what the queue has allocated and reserved for
  inqueue jobs stays within the real capability; a task is allocatable while the queue's
  allocation stays within its deserved share; a queue whose deserved share is all allocated
  is overused and skipped.
- ``capacity``: the same enqueue rule; a task is allocatable within the real capability.
- ``overcommit``: the PodGroup's ``minResources`` plus every inqueue job's must fit in the
  cluster's allocatable times ``overcommit-factor`` (1.2) minus what is used.

A PodGroup without ``minResources`` always enqueues. A queue that is not Open takes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from labeler.sim.volcano import resources as R
from labeler.sim.volcano.model import Queue

INF = float("inf")
Res = dict[str, float]


@dataclass(frozen=True)
class JobUse:
    """What one PodGroup of the cluster holds and asks in its queue."""

    queue: str
    phase: str
    min_resources: Mapping[str, int] | None
    min_member: int
    allocated: Mapping[str, int]
    pending: Mapping[str, int]
    allocated_count: int

    def elastic(self) -> dict[str, int]:
        return R.exceeded(self.allocated, self.min_resources or {})

    def reserved(self) -> Res:
        """``GetInqueueResource`` as v1.15.0 computes it: the minResources not yet covered
        by allocated tasks, for cpu and memory. A scalar resource (a name with a domain,
        ``hugepages-*``) is read in whole units and set against Volcano's milli-units, so it
        reserves a thousandth of its quantity, less what is allocated; any other name
        (``pods``, ``ephemeral-storage``) reserves nothing."""
        out: Res = {}
        for k, v in (self.min_resources or {}).items():
            if k in R.NATIVE:
                left: float = v - self.allocated.get(k, 0)
            elif R.is_scalar(k):
                left = v / 1000 - self.allocated.get(k, 0) if k in self.allocated else v / 1000
            else:
                continue
            if left > 0:
                out[k] = left
        return out

    def inqueue(self) -> Res:
        if self.min_resources is None:
            return {}
        if self.phase == "Inqueue" or (
            self.phase == "Running" and self.allocated_count >= self.min_member
        ):
            return self.reserved()
        return {}


def _min_dim(r: Res, cap: Mapping[str, float], *, infinity: bool) -> Res:
    """``MinDimensionResource``: cpu and memory always; a scalar ``cap`` lacks is kept
    (Infinity) or zeroed (Zero)."""
    out = dict(r)
    for k, v in r.items():
        if k in R.NATIVE:
            out[k] = min(v, cap.get(k, 0.0))
        elif k in cap:
            out[k] = min(v, cap[k])
        elif not infinity:
            out[k] = 0.0
    for k in R.NATIVE:
        out.setdefault(k, 0.0)
        out[k] = min(out[k], cap.get(k, 0.0))
    return out


def _max(a: Mapping[str, float], b: Mapping[str, float]) -> Res:
    out = {k: v for k, v in a.items() if v >= 0}
    for k, v in b.items():
        if v >= 0:
            out[k] = max(v, out.get(k, 0.0))
    return out


@dataclass
class QueueAttr:
    queue: Queue
    real_capability: Res
    allocated: Res = field(default_factory=dict)
    request: Res = field(default_factory=dict)
    inqueue: Res = field(default_factory=dict)
    elastic: Res = field(default_factory=dict)
    deserved: Res = field(default_factory=dict)


def _capability(q: Queue) -> Res | None:
    if not q.capability:
        return None
    cap: Res = {k: float(v) for k, v in q.capability.items()}
    for k in R.NATIVE:
        if cap.get(k, 0) <= 0:
            cap[k] = INF
    return cap


def real_capability(q: Queue, queues: Mapping[str, Queue], cluster_total: Mapping[str, int]) -> Res:
    """What the queue may use at most: the cluster beyond every queue's guarantee, plus its
    own guarantee, capped by its capability."""
    total_guarantee = R.total(x.guarantee for x in queues.values())
    base = R.add(R.exceeded(cluster_total, total_guarantee), q.guarantee)
    real: Res = {k: float(v) for k, v in base.items()}
    cap = _capability(q)
    return real if cap is None else _min_dim(real, cap, infinity=True)


def build_attrs(
    queues: Mapping[str, Queue], jobs: Sequence[JobUse], cluster_total: Mapping[str, int]
) -> dict[str, QueueAttr]:
    """The queue attributes both plugins start from (queues that have jobs)."""
    attrs: dict[str, QueueAttr] = {}
    for job in jobs:
        q = queues[job.queue]
        if job.queue not in attrs:
            attrs[job.queue] = QueueAttr(q, real_capability(q, queues, cluster_total))
        a = attrs[job.queue]
        a.allocated = _addf(a.allocated, job.allocated)
        a.request = _addf(a.request, R.add(job.allocated, job.pending))
        a.inqueue = _addf(a.inqueue, job.inqueue())
        a.elastic = _addf(a.elastic, job.elastic())
    return attrs


def _addf(a: Mapping[str, float], b: Mapping[str, float] | Mapping[str, int]) -> Res:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0.0) + v
    return out


def proportion_deserved(attrs: Mapping[str, QueueAttr], cluster_total: Mapping[str, int]) -> None:
    """Fill each queue's deserved share, as proportion's OnSessionOpen does."""
    remaining: Res = {k: float(v) for k, v in cluster_total.items()}
    meet: set[str] = set()
    while True:
        weight = sum(a.queue.weight for n, a in attrs.items() if n not in meet)
        if weight == 0:
            return
        before = dict(remaining)
        inc: Res = {}
        dec: Res = {}
        for name, a in attrs.items():
            if name in meet:
                continue
            old = dict(a.deserved)
            share = {k: v * a.queue.weight / weight for k, v in remaining.items()}
            d = _min_dim(_addf(a.deserved, share), a.real_capability, infinity=True)
            d = _min_dim(d, a.request, infinity=False)
            a.deserved = _max(d, {k: float(v) for k, v in a.queue.guarantee.items()})
            if R.less_equal(as_units(a.request), as_units(a.deserved)) or a.deserved == old:
                meet.add(name)
            for k in set(a.deserved) | set(old):
                delta = a.deserved.get(k, 0.0) - old.get(k, 0.0)
                (inc if delta > 0 else dec)[k] = (inc if delta > 0 else dec).get(k, 0.0) + abs(
                    delta
                )
        remaining = {
            k: v - inc.get(k, 0.0)
            for k, v in _addf(remaining, dec).items()
            if v - inc.get(k, 0.0) > 0
        }
        if not any(v > 0 for v in remaining.values()) or remaining == before:
            return


def as_units(r: Mapping[str, float]) -> dict[str, int]:
    """For comparisons: float shares against integer requests, with Volcano's tolerance."""
    return {k: int(v + 0.1) if v != INF else 1 << 62 for k, v in r.items()}


@dataclass(frozen=True)
class QueueVerdict:
    ok: bool
    reason: str = ""  # Volcano's words (the event it records), when not ok


def enqueue_check(
    plugins: Sequence[str],
    attr: QueueAttr,
    min_resources: Mapping[str, int] | None,
    overcommit: tuple[Res, Res] | None,
) -> QueueVerdict:
    """``JobEnqueueable`` of the enabled plugins, in order (the first refusal wins)."""
    for name in plugins:
        if name in ("proportion", "capacity"):
            if attr.queue.state != "Open":
                return QueueVerdict(
                    ok=False, reason=f"queue {attr.queue.name} is {attr.queue.state}, not Open"
                )
            if min_resources is None:
                continue
            # The inqueue part unrounded: a scalar's thousandths (reserved) tip a full queue.
            r = _addf(R.sub(R.add(min_resources, as_units(attr.allocated)),
                            as_units(attr.elastic)), attr.inqueue)  # fmt: skip
            short = R.over_in_requested(r, as_units(attr.real_capability), min_resources)
            if short:
                return QueueVerdict(
                    ok=False,
                    reason=_names("queue resource quota insufficient", "insufficient", short),
                )
        elif name == "overcommit" and overcommit is not None and min_resources is not None:
            idle, inqueue = overcommit
            short = R.over_in_requested(
                _addf(inqueue, min_resources), as_units(idle), min_resources
            )
            if short:
                return QueueVerdict(
                    ok=False, reason=_names("resource in cluster is overused", "overused", short)
                )
    return QueueVerdict(ok=True)


def _names(prefix: str, verb: str, names: Sequence[str]) -> str:
    return f"{prefix}: {', '.join(f'{verb} {n}' for n in names)}" if names else prefix


def overcommit_view(
    cluster_total: Mapping[str, int],
    used: Mapping[str, int],
    jobs: Sequence[JobUse],
    factor: float,
) -> tuple[Res, Res]:
    """(cluster allocatable × factor − used, what inqueue and running jobs reserve)."""
    idle = {k: v * factor - used.get(k, 0) for k, v in cluster_total.items()}
    inqueue: Res = {}
    for j in jobs:
        if j.min_resources is None:
            continue
        if j.phase == "Inqueue":
            inqueue = _addf(inqueue, j.min_resources)
        elif j.phase == "Running" and j.allocated_count >= j.min_member:
            inqueue = _addf(inqueue, j.reserved())
    return idle, inqueue


def allocatable(plugin: str, attr: QueueAttr, request: Mapping[str, int]) -> bool:
    """``AllocatableFn`` of proportion (within deserved) or capacity (within capability)."""
    if attr.queue.state != "Open":
        return False
    limit = attr.deserved if plugin == "proportion" else attr.real_capability
    return not R.over_in_requested(
        R.add(as_units(attr.allocated), request), as_units(limit), request
    )


def overused(attr: QueueAttr) -> bool:
    """proportion's ``OverusedFn``: the deserved share is all allocated."""
    return R.less_equal(as_units(attr.deserved), as_units(attr.allocated))
