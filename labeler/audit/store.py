"""The exporter's incremental state: one small fact record per in-scope node.

A watch event replaces one node's facts; only when the facts actually change (most node
updates are status heartbeats that touch no label) is the recomputation woken. The
recomputation is a single linear pass (:func:`labeler.core.states.build_report`) run at
most once per debounce interval, so a burst of 1,000 label writes costs a few passes, not
1,000 — and a single change is still published well within a second.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from labeler.core.model import Topology
from labeler.core.node import NodeInfo
from labeler.core.scope import Scope
from labeler.core.states import NodeFacts, node_facts


class NodeStore:
    """Thread-safe map node name → facts, holding in-scope nodes only."""

    def __init__(self, topology: Topology, scope: Scope) -> None:
        self.topology = topology
        self.scope = scope
        self.changed = threading.Event()
        self._lock = threading.Lock()
        self._facts: dict[str, NodeFacts] = {}
        self.generation = 0  # bumped on every effective change

    def replace(self, nodes: Iterable[NodeInfo]) -> None:
        """Start over from a full LIST (at start and after 410)."""
        fresh = {}
        for node in nodes:
            facts = node_facts(self.topology, self.scope, node)
            if facts is not None:
                fresh[node.name] = facts
        with self._lock:
            self._facts = fresh
            self.generation += 1
        self.changed.set()

    def apply(self, kind: str, node: NodeInfo) -> bool:
        """Apply one watch event; True when the audit's view changed."""
        if kind == "DELETED":
            facts = None
        elif kind in ("ADDED", "MODIFIED"):
            facts = node_facts(self.topology, self.scope, node)
        else:
            return False
        with self._lock:
            old = self._facts.get(node.name)
            if old == facts:
                return False
            if facts is None:
                del self._facts[node.name]
            else:
                self._facts[node.name] = facts
            self.generation += 1
        self.changed.set()
        return True

    def snapshot(self) -> tuple[int, list[NodeFacts]]:
        with self._lock:
            return self.generation, list(self._facts.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._facts)
