"""A proposed placement drawn over the topology map: the simulators fill it (``advise
--html``), the map draws it, and neither knows the other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class JobOverlay:
    """A proposed placement drawn over the map (``advise --html``)."""

    scheduler: str  # whose rules placed it: "Kueue", "Volcano", "kube-scheduler"
    fits: bool
    headline: str  # the verdict, one line
    message: str  # the scheduler's message when it does not fit, else "" (shown after its name)
    pods: Mapping[str, int]  # node -> pods placed on it
    domain: tuple[str, ...] | None  # path of the domain that holds (or would best hold) the job
    domain_role: str  # "placement" or "best"
    blocked: Mapping[str, str]  # node -> why it takes no pod (full, taint, outside...)
    notes: tuple[str, ...] = ()
