"""Kubernetes Events on a Node, so ``kubectl describe node`` shows what the agent did.

Events are advisory: a failure to create one is logged and never stops the caller. They are
rate-limited per reason, and an identical (reason, message) pair is not repeated within
``repeat_interval``, so a standing conflict or a long IMDS outage does not flood etcd.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from labeler.base.logs import logger
from labeler.kube.client import Api
from labeler.kube.errors import call

log = logger(__name__)

COMPONENT = "topology-labeler"
NAMESPACE = "default"  # where node Events live: Nodes are cluster-scoped
MAX_MESSAGE = 1024
EVENTS = f"/api/v1/namespaces/{NAMESPACE}/events"


class NodeEvents:
    """Creates core/v1 Events about one node (involvedObject kind Node, name, uid)."""

    def __init__(
        self,
        api: Api,
        node: str,
        *,
        component: str = COMPONENT,
        per_reason_interval: float = 30.0,
        repeat_interval: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.node = node
        self.uid = ""
        self.component = component
        self.per_reason_interval = per_reason_interval
        self.repeat_interval = repeat_interval
        self._clock = clock
        self._last_reason: dict[str, float] = {}
        self._last_message: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def allow(self, reason: str, message: str) -> bool:
        """Rate limit; records the event as sent when it returns True."""
        now = self._clock()
        with self._lock:
            last = self._last_reason.get(reason)
            if last is not None and now - last < self.per_reason_interval:
                return False
            last = self._last_message.get((reason, message))
            if last is not None and now - last < self.repeat_interval:
                return False
            self._last_reason[reason] = now
            self._last_message[(reason, message)] = now
            return True

    def emit(self, event_type: str, reason: str, message: str) -> bool:
        """Create the Event unless rate-limited; True when it was created."""
        if not self.allow(reason, message):
            log.debug("event rate-limited node=%s reason=%s", self.node, reason)
            return False
        body = json.dumps(self.body(event_type, reason, message)).encode()
        try:
            call(
                lambda: self.api.send("POST", EVENTS, body=body, echo=False),
                verb="create",
                resource=f"events (namespace {NAMESPACE})",
                attempts=1,  # a retry after a lost answer would duplicate the Event
            )
            return True
        except Exception as e:  # an Event is never worth failing for
            log.warning("cannot create event node=%s reason=%s error=%s", self.node, reason, e)
            return False

    def body(self, event_type: str, reason: str, message: str) -> dict[str, Any]:
        now = datetime.now(UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        involved: dict[str, str] = {"apiVersion": "v1", "kind": "Node", "name": self.node}
        if self.uid:
            involved["uid"] = self.uid
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                # client-go's recorder style: <object>.<unique hex>
                "name": f"{self.node}.{uuid.uuid4().hex[:16]}",
                "namespace": NAMESPACE,
            },
            "involvedObject": involved,
            "reason": reason,
            "message": message[:MAX_MESSAGE],
            "type": event_type,
            "source": {"component": self.component, "host": self.node},
            "reportingComponent": self.component,
            "reportingInstance": self.node,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
