"""The readiness gate's two writes: remove one startup taint, set one Node condition.

Both are opt-in (``agent --remove-taint``, ``--set-condition``) and small on purpose:
- the taint goes by a JSON patch that first *tests* the entry at its index (key and
  effect) and then removes it, so a concurrent change of the taint list makes the patch
  fail (422) instead of removing another taint or losing someone else's; the agent then
  re-reads the node and tries again;
- the condition goes by a strategic merge patch of ``status.conditions`` on the status
  subresource, merged by ``type``: the kubelet's conditions are never rewritten.
Each answer (the node echoed back) is read whole, so its connection can serve the next
request, and must be that node (labeler.kube.answer).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from labeler.base.logs import logger
from labeler.core.node import TOPOLOGY_CONDITION, Taint
from labeler.kube.client import Api
from labeler.kube.nodes import node_path
from labeler.kube.raw import call_discard

log = logger(__name__)

JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
CONDITION_TYPE = TOPOLOGY_CONDITION


def remove_taint(api: Api, node: str, index: int, taint: Taint) -> None:
    """Remove ``taint``, found at ``index`` of ``spec.taints``; fails if it moved."""
    ops = [
        {"op": "test", "path": f"/spec/taints/{index}/key", "value": taint.key},
        {"op": "test", "path": f"/spec/taints/{index}/effect", "value": taint.effect},
        {"op": "remove", "path": f"/spec/taints/{index}"},
    ]
    data = json.dumps(ops).encode()
    call_discard(
        lambda: api.send("PATCH", node_path(node), body=data, content_type=JSON_PATCH, name=node),
        verb="patch",
        resource=f"nodes/{node}",
    )
    log.info("startup taint removed node=%s taint=%s", node, taint)


def set_condition(
    api: Api, node: str, status: str, reason: str, message: str, *, transition: bool
) -> None:
    """Set the TopologyLabeled condition; ``transition``: its status changed."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": reason,
        "message": message[:1024],
        "lastHeartbeatTime": now,
    }
    if transition:
        condition["lastTransitionTime"] = now
    body = json.dumps({"status": {"conditions": [condition]}}).encode()
    path = node_path(node) + "/status"
    call_discard(
        lambda: api.send("PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH, name=node),
        verb="patch",
        resource=f"nodes/{node}/status",
    )
    log.info("condition set node=%s %s=%s reason=%s", node, CONDITION_TYPE, status, reason)
