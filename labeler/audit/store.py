"""The exporter's incremental state: one small fact record per in-scope node.

A watch event replaces one node's facts; only when the facts actually change (most node
updates are status heartbeats that touch no label) is the recomputation woken. The
recomputation is a single linear pass (:func:`labeler.core.states.build_report`) run at
most once per debounce interval, so a burst of 1,000 label writes costs a few passes, not
1,000 — and a single change is still published well within a second.

A node's DRA devices (ResourceSlices of the scope's drivers) can put it in scope without
the node itself changing, so every candidate node's facts are kept (CPU nodes too: a few
hundred bytes each) and merged with its devices when either side changes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from labeler.core.dra import SliceDevices, SliceIndex
from labeler.core.model import Topology
from labeler.core.node import NodeInfo
from labeler.core.scope import Scope
from labeler.core.states import NodeFacts, candidate_facts, in_scope


class NodeStore:
    """Thread-safe map node name → facts, holding in-scope nodes only."""

    def __init__(self, topology: Topology, scope: Scope) -> None:
        self.topology = topology
        self.scope = scope
        self.changed = threading.Event()
        self._lock = threading.Lock()
        self._candidates: dict[str, NodeFacts] = {}  # every node the selector admits
        self._facts: dict[str, NodeFacts] = {}  # the ones in scope, with their devices
        self._slices = SliceIndex(scope.dra_drivers)
        self.generation = 0  # bumped on every effective change
        self.nodes_listed = False  # a full LIST of nodes is in (set with its facts)

    def replace(self, nodes: Iterable[NodeInfo]) -> None:
        """Start over from a full LIST (at start and after 410)."""
        fresh = {}
        for node in nodes:
            facts = candidate_facts(self.topology, self.scope, node)
            if facts is not None:
                fresh[node.name] = facts
        with self._lock:
            self._candidates = fresh
            self._facts = {}
            self._refresh(fresh)
            self.generation += 1
            self.nodes_listed = True
        self.changed.set()

    def apply(self, kind: str, node: NodeInfo) -> bool:
        """Apply one watch event; True when the audit's view changed."""
        if kind == "DELETED":
            facts = None
        elif kind in ("ADDED", "MODIFIED"):
            facts = candidate_facts(self.topology, self.scope, node)
        else:
            return False
        with self._lock:
            if facts is None:
                self._candidates.pop(node.name, None)
            else:
                self._candidates[node.name] = facts
            changed = self._refresh((node.name,))
        return self._changed(changed)

    def replace_slices(self, driver: str, slices: Iterable[SliceDevices]) -> bool:
        """Start one DRA driver's slices over from a full LIST."""
        with self._lock:
            changed = self._refresh(self._slices.replace(driver, slices))
        return self._changed(changed)

    def apply_slice(self, kind: str, s: SliceDevices) -> bool:
        """Apply one ResourceSlice watch event; True when the audit's view changed."""
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return False
        with self._lock:
            touched = self._slices.remove(s.name) if kind == "DELETED" else self._slices.put(s)
            changed = self._refresh(touched)
        return self._changed(changed)

    def _refresh(self, names: Iterable[str]) -> bool:
        """Recompute the in-scope facts of ``names`` (lock held); True if any changed."""
        changed = False
        for name in names:
            candidate = self._candidates.get(name)
            devices = self._slices.devices(name)
            facts = None if candidate is None else in_scope(self.scope, candidate, devices)
            if self._facts.get(name) == facts:
                continue
            changed = True
            if facts is None:
                del self._facts[name]
            else:
                self._facts[name] = facts
        if changed:
            self.generation += 1
        return changed

    def _changed(self, changed: bool) -> bool:
        if changed:
            self.changed.set()
        return changed

    def snapshot(self) -> tuple[int, list[NodeFacts]]:
        with self._lock:
            return self.generation, list(self._facts.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._facts)
