"""What the agent tells the outside about its node: Kubernetes Events, log lines, and the
conflicts and unknown labels among its metrics.

One place decides what is worth saying, so that the reconcile step (reconcile.py) only says
what happened: a dry run emits no Event (it must leave no trace in the cluster), and a
standing conflict or a label that stays unknown is reported when it first appears or its
reason changes, not on every reconcile or read (``NodeEvents`` also rate-limits Events, so
a long outage does not flood etcd).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labeler.agent.decide import ReconcileResult, Status
from labeler.base.logs import logger
from labeler.base.metrics import AgentMetrics
from labeler.core.plan import Conflict
from labeler.kube.events import NodeEvents

log = logger(__name__)


class AgentEvents:
    """The agent's reports about one node. ``emit`` may be called from any thread (the source
    thread reports an unreadable source); the rest belongs to the loop thread."""

    def __init__(
        self, node: str, metrics: AgentMetrics, events: NodeEvents | None, *, dry_run: bool
    ) -> None:
        self.node = node
        self.metrics = metrics
        self._events = events
        self._dry_run = dry_run
        self._conflicts: frozenset[tuple[str, str, str | None]] = frozenset()
        self._unknown: dict[str, tuple[str, str]] = {}

    def node_uid(self, uid: str) -> None:
        """The node's uid, which Events name as their involved object."""
        if uid and self._events is not None:
            self._events.uid = uid

    def emit(self, event_type: str, reason: str, message: str) -> None:
        if self._events is not None and not self._dry_run:
            self._events.emit(event_type, reason, message)

    def conflicts(self, conflicts: Sequence[Conflict]) -> None:
        """Count and announce each conflict once, while it stands."""
        new = [c for c in conflicts if (c.key, c.current, c.wanted) not in self._conflicts]
        if new:
            self.metrics.label_conflicts.inc(len(new))
            self.emit("Warning", "TopologyLabelConflict", "; ".join(str(c) for c in new))
        self._conflicts = frozenset((c.key, c.current, c.wanted) for c in conflicts)

    def unknown(self, source: str, unknown: Mapping[str, tuple[str, str]]) -> None:
        """The label keys the last reading could not tell: key → (cause, reason); each is
        neither written nor removed. Logged when one appears or its reason changes; the
        gauge ``topology_labeler_label_unknown{key,cause}`` holds the current ones."""
        if unknown == self._unknown:
            return
        gauge = self.metrics.label_unknown
        gauge.clear()
        for key, (cause, reason) in sorted(unknown.items()):
            gauge.labels(key, cause).set(1)
            if self._unknown.get(key) != (cause, reason):
                log.warning(
                    "topology label unknown, kept as it is node=%s source=%s key=%s cause=%s "
                    "reason=%s",
                    self.node,
                    source,
                    key,
                    cause,
                    reason,
                )
        for key in sorted(set(self._unknown) - set(unknown)):
            log.info("topology label known again node=%s key=%s", self.node, key)
        self._unknown = dict(unknown)

    def result(self, result: ReconcileResult) -> None:
        """One log line for one reconcile."""
        node = self.node
        if result.status == Status.ERROR:
            log.error("reconcile failed node=%s error=%s", node, result.message)
        elif result.status == Status.CONFLICT:
            log.warning("label conflict node=%s %s", node, result.message)
        elif result.status == Status.NO_DATA:
            log.info("no topology data node=%s reason=%s", node, result.message)
        elif result.written:
            log.info("labels reconciled node=%s written=true", node)
        else:
            log.debug("labels current node=%s status=%s", node, result.status)


def short(e: BaseException, limit: int = 200) -> str:
    """An exception's message on one bounded line (a RecursionError's can be long)."""
    text = " ".join(str(e).split()) or repr(e)
    return text if len(text) <= limit else text[: limit - 1] + "…"
