"""What Volcano writes on a PodGroup after a cycle, in its words (gang's ``OnSessionClose``,
``JobInfo.FitError``, ``TaskSchedulingReason``).

A gang that is not ready gets the condition ``Unschedulable`` with
``"<n>/<tasks> tasks in gang unschedulable: pod group is not ready, <counts>; Pending:
<reasons>. Origin reason is <task>: <fit errors>"``; a ready one ``Scheduled`` with
"tasks in gang are ready to be scheduled". A pending task whose last dry run placed it is
"Schedulable" (it could go there once the gang is complete); otherwise "Unschedulable".
Volcano reports the fit errors of the first task it finds in a map; here the first in task
order.
"""

from __future__ import annotations

from collections import Counter

from labeler.sim.volcano.model import ALLOCATED_STATES, PENDING
from labeler.sim.volcano.session import JobState

READY = "tasks in gang are ready to be scheduled"


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{n} {k}" for k, n in counts.items() if n > 0))


def fit_error(job: JobState) -> str:
    """``JobInfo.FitError``."""
    counts: Counter[str] = Counter({s: n for s, n in job.counts.items() if n > 0})
    counts["minAvailable"] = job.min_available
    head = "pod group is ready" if job.is_ready() else "pod group is not ready"
    text = f"{head}, {_histogram(counts)}"
    pending: Counter[str] = Counter()
    for t in job.tasks:
        if t.status == PENDING:
            last = t.last[0] if t.last else PENDING
            pending["Schedulable" if last in ALLOCATED_STATES else "Unschedulable"] += 1
    if pending:
        text += f"; Pending: {_histogram(pending)}"
    if job.job_fit_error:
        return f"{text}. Origin reason is: {job.job_fit_error}"
    for t in job.tasks:
        fe = job.fit_errors.get(t.name)
        if fe is not None:
            return f"{text}. Origin reason is {t.name}: {fe.message()}"
    return text


def gang_message(job: JobState) -> str:
    """The PodGroup condition message of a gang left not ready (``""`` when ready)."""
    if job.is_ready():
        return ""
    schedulable = job.ready_num() + sum(
        1
        for t in job.tasks
        if t.status == PENDING and t.last is not None and t.last[0] in ALLOCATED_STATES
    )
    unready = job.min_available - schedulable
    return f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {fit_error(job)}"
