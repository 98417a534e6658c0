"""Where a job's pods landed, level by level — the view operators otherwise assemble by
hand with ``kubectl get pods -o jsonpath`` and ``kubectl get node -L …``.

The view is pure: pods (as the API returns them) and the labels of their nodes in, a view
out. :func:`read_job_placement` gathers those from the cluster, through ``labeler.kube``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labeler.base.logs import logger
from labeler.core.model import Level, Topology
from labeler.core.node import TERMINATED_PHASES

log = logger(__name__)

# Up to this many distinct nodes, their labels are read with one GET each; beyond, one
# paginated LIST of every node is cheaper.
GET_EACH_LIMIT = 50


@dataclass(frozen=True)
class PodSpot:
    """One pod and, if scheduled, its node's value at every level (None = label missing)."""

    namespace: str
    name: str
    phase: str
    node: str | None  # None: not scheduled yet
    values: tuple[str | None, ...]  # widest first; all None when pending or node unknown
    node_found: bool = True  # False: the node named by the pod no longer exists

    @property
    def pending(self) -> bool:
        return self.node is None

    @property
    def finished(self) -> bool:
        return self.phase in TERMINATED_PHASES


@dataclass(frozen=True)
class LevelSpread:
    level: Level
    domains: Mapping[str, int]  # value -> pods
    unlabeled: int  # counted pods whose node lacks this level's label


@dataclass(frozen=True)
class JobPlacement:
    topology: Topology
    pods: tuple[PodSpot, ...]

    @property
    def counted(self) -> tuple[PodSpot, ...]:
        """The pods the verdict is about: scheduled and still running (or all finished)."""
        scheduled = [p for p in self.pods if not p.pending]
        active = [p for p in scheduled if not p.finished]
        return tuple(active or scheduled)

    @property
    def pending(self) -> tuple[PodSpot, ...]:
        return tuple(p for p in self.pods if p.pending)

    def spread(self) -> list[LevelSpread]:
        """Per level, widest first: how many pods in each domain."""
        out = []
        pods = self.counted
        for i, lv in enumerate(self.topology.levels):
            domains: dict[str, int] = {}
            unlabeled = 0
            for p in pods:
                v = p.values[i]
                if v is None:
                    unlabeled += 1
                else:
                    domains[v] = domains.get(v, 0) + 1
            out.append(LevelSpread(lv, dict(sorted(domains.items())), unlabeled))
        return out

    def verdict(self) -> str:
        """One line: e.g. "all 16 pods in 1 local_block" or a split, narrowest level first."""
        pods = self.counted
        nodes = {p.node for p in pods}
        tail = []
        if self.pending:
            tail.append(f"{len(self.pending)} pod(s) pending (not scheduled)")
        finished = [p for p in self.pods if p.finished and p not in pods]
        if finished:
            tail.append(f"{len(finished)} finished pod(s) not counted")
        missing = [p.node for p in pods if not p.node_found]
        if missing:
            tail.append(f"{len(set(missing))} node(s) no longer exist")
        if not pods:
            head = "no pod is scheduled yet" if self.pods else "no pod matches"
            return "; ".join([head, *tail])
        spreads = list(reversed(self.spread()))  # narrowest first
        unlabeled = [
            f"{s.unlabeled} pod(s) on nodes without {s.level.name}" for s in spreads if s.unlabeled
        ]
        who = f"{len(pods)} pod(s) on {len(nodes)} node(s)"
        tight = next((s for s in spreads if len(s.domains) == 1 and not s.unlabeled), None)
        if tight is spreads[0]:
            head = f"all {who} in 1 {tight.level.name}"
        else:
            split = [
                f"{len(s.domains)} {_plural(s.level.name, len(s.domains))}"
                for s in spreads
                if s is not tight and (tight is None or spreads.index(s) < spreads.index(tight))
            ]
            head = f"{who} split across " + ", ".join(split)
            if tight is not None:
                head += f"; all in 1 {tight.level.name}"
        return "; ".join([head, *unlabeled, *tail])

    def to_json(self) -> dict[str, Any]:
        """The machine form of ``placement -o json``: every pod, and the pods per domain."""
        levels = self.topology.levels
        return {
            "verdict": self.verdict(),
            "pods": [
                {
                    "namespace": p.namespace,
                    "name": p.name,
                    "phase": p.phase,
                    "node": p.node,
                    "nodeFound": p.node_found,
                    "domains": {lv.name: v for lv, v in zip(levels, p.values, strict=True)},
                }
                for p in self.pods
            ],
            "levels": [
                {
                    "name": s.level.name,
                    "key": s.level.key,
                    "pods": dict(s.domains),
                    "podsOnUnlabeledNodes": s.unlabeled,
                }
                for s in self.spread()
            ],
        }


def _plural(name: str, n: int) -> str:
    return name if n == 1 else name + "s"


def job_placement(
    topology: Topology,
    pods: Sequence[Mapping[str, Any]],
    node_labels: Mapping[str, Mapping[str, str]],
) -> JobPlacement:
    """Join pods with their nodes' labels (``node_labels``: node name → labels)."""
    spots = []
    none: tuple[str | None, ...] = tuple(None for _ in topology.levels)
    for pod in pods:
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName") or None
        labels = node_labels.get(node) if node else None
        spots.append(
            PodSpot(
                namespace=str(meta.get("namespace", "")),
                name=str(meta.get("name", "")),
                phase=str((pod.get("status") or {}).get("phase") or "Unknown"),
                node=node,
                values=tuple(labels.get(k) for k in topology.keys) if labels is not None else none,
                node_found=node is None or labels is not None,
            )
        )
    spots.sort(key=lambda s: (s.namespace, s.node is None, s.node or "", s.name))
    return JobPlacement(topology, tuple(spots))


def read_job_placement(
    api: Any, topology: Topology, *, selector: str, namespace: str | None = None
) -> JobPlacement:
    """The pods matching ``selector`` (in ``namespace``, or all) joined with their nodes'
    labels, read from the cluster. A node a pod names but that is gone is shown as such."""
    from labeler.kube.errors import NotFound
    from labeler.kube.nodes import get_node, list_nodes
    from labeler.kube.pods import list_pods

    pods = list_pods(api, namespace=namespace, label_selector=selector)
    wanted = {n for p in pods if (n := (p.get("spec") or {}).get("nodeName"))}
    labels: dict[str, dict[str, str]] = {}
    if len(wanted) > GET_EACH_LIMIT:
        nodes, _ = list_nodes(api)
        labels = {n.name: dict(n.labels) for n in nodes if n.name in wanted}
    else:
        for name in sorted(wanted):
            try:
                labels[name] = dict(get_node(api, name).labels)
            except NotFound:
                log.warning("node=%s named by a pod no longer exists", name)
    return job_placement(topology, pods, labels)
