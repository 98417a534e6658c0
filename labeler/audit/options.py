"""The exporter's settings (``audit --serve``). Each field's default is the only default:
the ``audit`` command's flags and their ``--help`` read it from here. Light on purpose: the
command line imports it to build its parser."""

from __future__ import annotations

from dataclasses import dataclass

from labeler.base.backoff import STALE_AFTER


@dataclass(frozen=True)
class ExporterOptions:
    debounce: float = 0.1  # seconds between a change and its recomputation
    watch_timeout: int = 300  # server-side timeout of one WATCH request
    page_size: int = 500
    first_backoff: float = 1.0  # after a failed LIST or WATCH; doubles up to max_backoff
    max_backoff: float = 30.0
    stale_after: float = STALE_AFTER  # seconds the node watch may be down: then not ready
    hotswap_interval: float = 15.0  # at most one recomputation of the hot-swap view per this
