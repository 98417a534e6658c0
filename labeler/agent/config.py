"""The agent's settings. Each field's default is the only default: the ``agent`` command's
flags and their ``--help`` read it from here. Light on purpose: the command line imports it
to build its parser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from labeler.agent.decide import OnMissing
from labeler.core.labels import Encoding
from labeler.core.profiles import Profile

if TYPE_CHECKING:
    from labeler.core.slinky import Slinky


@dataclass(frozen=True)
class AgentConfig:
    node: str
    profile: Profile
    encoding: Encoding
    on_missing: OnMissing = OnMissing.SKIP
    adopt: bool = False
    dry_run: bool = False
    interval: float = 600.0
    jitter: float = 0.1
    error_backoff: float = 10.0  # first retry after a source error; doubles up to interval
    api_backoff: float = 1.0  # first retry after an API error; doubles up to 60 s
    watch_timeout: int = 300
    min_write_interval: float = 1.0  # never more than one patch a second, even in a fight
    # The longest one blocking call (a source read, an API request) may take before its
    # thread counts as stuck; the watch may also wait a whole watch request for an event.
    stall_after: float = 300.0
    confirm_reads: int = 2  # reads in a row that must agree before a topology change is written
    remove_taint: str | None = None  # readiness gate: this NoSchedule taint goes once labeled
    set_condition: bool = False  # readiness gate: keep the TopologyLabeled condition
    slinky: Slinky | None = None  # also keep the Slinky topology annotation
