"""The readiness gate: let pods onto the node only once its topology labels are there.

Off unless asked. Two ways, both driven by each reconcile's result (docs/agent.md, "Readiness
gate"): remove a ``NoSchedule`` startup taint once every level label is on the node
(``--remove-taint``; only ever removed, never added back, so the agent cannot take a node
out of service), and keep the node condition ``TopologyLabeled`` (``--set-condition``) for a
Node Readiness Controller rule to act on. A transient state (an error, no source outcome
yet) changes neither: a restart or an API outage must not flip a ready node to not ready.
"""

from __future__ import annotations

from typing import Any

from labeler.agent.decide import ReconcileResult, Status
from labeler.agent.events import AgentEvents
from labeler.base.logs import logger
from labeler.core.node import NodeInfo
from labeler.kube import readiness
from labeler.kube.errors import KubeError

log = logger(__name__)


class ReadinessGate:
    """The taint and the condition of one node. Used by the loop thread only."""

    def __init__(
        self,
        api: Any,
        node: str,
        events: AgentEvents,
        *,
        remove_taint: str | None,
        set_condition: bool,
    ) -> None:
        self.api = api
        self.node = node
        self.events = events
        self.remove_taint = remove_taint
        self.set_condition = set_condition
        self._condition: tuple[str, str] | None = None  # (status, reason) this process set

    @property
    def enabled(self) -> bool:
        return bool(self.remove_taint) or self.set_condition

    def update(self, node: NodeInfo, result: ReconcileResult, *, labeled: bool) -> None:
        """Open the gate if ``result`` says the node is labeled (``labeled``: every level
        label present and current); keep the condition's status and reason current."""
        if result.status in (Status.ERROR, Status.WAITING):
            return
        ready = labeled and result.status != Status.INCOMPLETE
        try:
            if ready and self.remove_taint:
                for index, taint in enumerate(node.taints):
                    if taint.key == self.remove_taint and taint.effect == "NoSchedule":
                        readiness.remove_taint(self.api, self.node, index, taint)
                        self.events.emit("Normal", "TopologyTaintRemoved", f"removed taint {taint}")
                        break
            if self.set_condition:
                status, reason, message = condition(ready, result)
                # Until this process writes it, the node's own condition is what stands:
                # a restarted agent (or --once) that finds it current writes nothing.
                previous = self._condition or node.condition
                if (status, reason) != previous:
                    transition = previous is None or previous[0] != status
                    readiness.set_condition(
                        self.api, self.node, status, reason, message, transition=transition
                    )
                    self._condition = (status, reason)
        except KubeError as e:
            # A taint list changed under us (the patch's test failed) or the API is down:
            # the watch brings the node again and the next reconcile retries.
            log.warning("readiness gate not updated node=%s error=%s", self.node, e)


def condition(ready: bool, result: ReconcileResult) -> tuple[str, str, str]:
    """(status, reason, message) of the TopologyLabeled condition."""
    if ready:
        return "True", "Labeled", "every topology level label is on the node"
    reasons = {
        Status.NO_DATA: "NoTopologyData",
        Status.INCOMPLETE: "TopologyIncomplete",
        Status.CONFLICT: "LabelConflict",
    }
    reason = reasons.get(result.status, "NotLabeled")
    return "False", reason, result.message or "a topology level label is missing"
