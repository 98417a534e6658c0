"""Node and HyperNode scores: which of the nodes (HyperNodes) that fit Volcano picks.

The score of a node is the sum of the enabled plugins' scores (``util.PrioritizeNodes``):

- ``binpack`` (``binpack.weight``, ``binpack.cpu``, ``binpack.memory``,
  ``binpack.resources``): per requested resource ``(used + request) / allocatable`` times its
  weight, averaged, × 100 × ``binpack.weight``; 0 when the pod would overfill any of them.
- ``nodeorder`` (``leastrequested.weight`` 1, ``mostrequested.weight`` 0,
  ``balancedresource.weight`` 1, ``nodeaffinity.weight`` 2, ``tainttoleration.weight`` 3):
  kube-scheduler's LeastAllocated (cpu/memory 50/50), MostAllocated, BalancedAllocation
  (cpu, memory, nvidia.com/gpu) and PreferNoSchedule taints, each 0–100 times its weight,
  and preferred node affinity: the sum of the matching terms' weights (1–100 each, not
  normalized) times its weight. Pod affinity, topology spread and image locality are not scored.
- ``network-topology-aware`` (``weight`` 1, ``hypernode.binpack.*``): for a pod of a job
  with a network topology, how low the common ancestor of the node's HyperNode and the
  HyperNode the job already uses is, ``(maxTier − tier) / (maxTier − minTier)``, ties
  broken by how many of the job's tasks that HyperNode holds; for other pods, a
  HyperNode-level binpack of every tier, tier k weighted ``fading^(k−1)``. × 100 × weight.

The HyperNode a sub-job goes to, among those where it fits, is chosen by the same plugin's
``HyperNodeOrderFn``: the binpack of all the sub-job's requests in the HyperNode (0 if they
would overfill it), ties broken by the share of its tasks already there.

Where scores tie, Volcano picks at random; here the first in name order wins.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labeler.core.quantity import CPU
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.conf import SchedulerConf
from labeler.sim.volcano.hypernodes import TOP, HyperNodeTree
from labeler.sim.volcano.model import Task
from labeler.sim.volcano.session import NodeState

MAX_SCORE = 100
DEFAULT_CPU, DEFAULT_MEMORY = 100, 200 * 1024 * 1024  # kube-scheduler's non-zero requests
PREFER_NO_SCHEDULE = "PreferNoSchedule"


def _int_arg(args: Mapping[str, Any], key: str, default: int) -> int:
    v = args.get(key, default)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _weights(args: Mapping[str, Any], prefix: str, *, cpu: int = 1, mem: int = 1) -> dict[str, int]:
    """``<prefix>.cpu``, ``<prefix>.memory``, ``<prefix>.resources`` and their weights."""
    out: dict[str, int] = {}
    for res in str(args.get(f"{prefix}.resources") or "").split(","):
        res = res.strip()
        if res:
            w = _int_arg(args, f"{prefix}.resources.{res}", 1)
            out[res] = w if w >= 0 else 1
    c, m = _int_arg(args, f"{prefix}.cpu", cpu), _int_arg(args, f"{prefix}.memory", mem)
    out[CPU] = c if c >= 0 else 1
    out[R.MEMORY] = m if m >= 0 else 1
    return out


@dataclass(frozen=True)
class Weights:
    binpack: int = 0  # 0: the plugin is off
    binpack_resources: Mapping[str, int] = field(default_factory=dict)
    least: int = 0
    most: int = 0
    balanced: int = 0
    node_affinity: int = 0
    taints: int = 0
    nta: bool = False  # network-topology-aware is configured
    nta_weight: int = 1
    nta_nodes: bool = False  # …and scores nodes (its nodeOrder switch)
    nta_resources: Mapping[str, int] = field(default_factory=dict)
    nta_normal_pods: bool = True
    nta_fading: float = 0.8
    hypernode_order: bool = False


def weights_from(conf: SchedulerConf) -> Weights:
    kw: dict[str, Any] = {}
    bp = conf.plugin("binpack")
    if bp is not None and bp.on("nodeOrder"):
        kw["binpack"] = _int_arg(bp.arguments, "binpack.weight", 1)
        kw["binpack_resources"] = _weights(bp.arguments, "binpack")
    no = conf.plugin("nodeorder")
    if no is not None and no.on("nodeOrder"):
        a = no.arguments
        kw.update(
            least=_int_arg(a, "leastrequested.weight", 1),
            most=_int_arg(a, "mostrequested.weight", 0),
            balanced=_int_arg(a, "balancedresource.weight", 1),
            node_affinity=_int_arg(a, "nodeaffinity.weight", 2),
            taints=_int_arg(a, "tainttoleration.weight", 3),
        )
    nta = conf.plugin("network-topology-aware")
    if nta is not None:
        a = nta.arguments
        w = _int_arg(a, "weight", 1)
        fading = a.get("hypernode.binpack.normal-pod.fading", 0.8)
        fading = float(fading) if isinstance(fading, int | float) and fading >= 0 else 0.8
        normal = a.get("hypernode.binpack.normal-pod.enable", True)
        kw.update(
            nta=True,
            nta_weight=w if w >= 0 else 1,
            nta_nodes=nta.on("nodeOrder"),
            nta_resources=_weights(a, "hypernode.binpack"),
            nta_normal_pods=normal if isinstance(normal, bool) else str(normal) == "true",
            nta_fading=fading,
            hypernode_order=nta.on("hyperNodeOrder"),
        )
    return Weights(**kw)


def binpack(task: Task, ns: NodeState, weights: Mapping[str, int], scale: int) -> float:
    """``BinPackingScore``."""
    score, wsum = 0.0, 0
    for res, req in task.requests.items():
        w = weights.get(res)
        if req <= 0 or w is None:
            continue
        cap = ns.node.allocatable.get(res, 0)
        if cap == 0 or w == 0:
            wsum += w
            continue
        used = req + ns.used.get(res, 0)
        if used > cap:
            return 0.0
        score += used * w / cap
        wsum += w
    return (score / wsum if wsum else score) * MAX_SCORE * scale


def _requested(task: Task, ns: NodeState, res: str) -> tuple[int, int]:
    """(allocatable, requested with this pod) with kube-scheduler's non-zero defaults."""
    req = task.requests.get(res, 0)
    if res == CPU and req == 0:
        req = DEFAULT_CPU
    elif res == R.MEMORY and req == 0:
        req = DEFAULT_MEMORY
    return ns.node.allocatable.get(res, 0), ns.used.get(res, 0) + req


def _least(task: Task, ns: NodeState) -> int:
    """LeastAllocated, cpu and memory weighted 50/50 (a resource the node lacks skipped)."""
    total = weight = 0
    for res in (CPU, R.MEMORY):
        cap, req = _requested(task, ns, res)
        if cap:
            total += 0 if req > cap else (cap - req) * MAX_SCORE // cap * 50
            weight += 50
    return total // weight if weight else 0


def _most(task: Task, ns: NodeState) -> int:
    """MostAllocated, cpu and memory weighted 1/1."""
    total = weight = 0
    for res in (CPU, R.MEMORY):
        cap, req = _requested(task, ns, res)
        if cap:
            total += min(req, cap) * MAX_SCORE // cap
            weight += 1
    return total // weight if weight else 0


def _balanced(task: Task, ns: NodeState) -> int:
    fractions = []
    for res in (CPU, R.MEMORY, "nvidia.com/gpu"):
        req = task.requests.get(res, 0)
        cap = ns.node.allocatable.get(res, 0)
        if cap == 0 or (res not in R.NATIVE and req == 0):
            continue
        fractions.append(min((ns.used.get(res, 0) + req) / cap, 1.0))
    if len(fractions) < 2:
        return MAX_SCORE
    mean = sum(fractions) / len(fractions)
    std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_SCORE)


def _normalized(raw: Mapping[str, int], *, reverse: bool) -> dict[str, int]:
    top = max(raw.values(), default=0)
    if top == 0:
        return {n: MAX_SCORE if reverse else 0 for n in raw}
    return {n: (MAX_SCORE - v * MAX_SCORE // top) if reverse else v * MAX_SCORE // top
            for n, v in raw.items()}  # fmt: skip


def nodeorder(task: Task, nodes: Sequence[NodeState], w: Weights) -> dict[str, float]:
    out = {n.name: 0.0 for n in nodes}
    for n in nodes:
        score = 0
        if w.least:
            score += w.least * _least(task, n)
        if w.most:
            score += w.most * _most(task, n)
        if w.balanced:
            score += w.balanced * _balanced(task, n)
        out[n.name] = float(score)
    if w.node_affinity and task.preferred:
        # NodeOrderFn calls NodeAffinity's Score alone, never its NormalizeScore: the raw
        # sum of the matching preferred terms' weights counts (weight 10: 10, not 100)
        for n in nodes:
            pref = sum(wt for wt, term in task.preferred if term.matches(n.name, n.node.labels))
            out[n.name] += w.node_affinity * pref
    if w.taints and any(t.effect == PREFER_NO_SCHEDULE for n in nodes for t in n.node.taints):
        prefer = [t for t in task.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
        raw = {
            n.name: sum(
                1
                for t in n.node.taints
                if t.effect == PREFER_NO_SCHEDULE and not any(x.tolerates(t) for x in prefer)
            )
            for n in nodes
        }
        for k, v in _normalized(raw, reverse=True).items():
            out[k] += w.taints * v
    else:  # no PreferNoSchedule taint: every node gets the same, the full score
        for k in out:
            out[k] += w.taints * MAX_SCORE
    return out


class HyperNodeScores:
    """network-topology-aware's view: resource sums per HyperNode and its scores."""

    def __init__(self, tree: HyperNodeTree, nodes: Mapping[str, NodeState], w: Weights) -> None:
        self.tree, self.w = tree, w
        self.allocatable: dict[str, dict[str, int]] = {}
        self.used: dict[str, dict[str, int]] = {}
        self.idle: dict[str, dict[str, int]] = {}
        self.future: dict[str, dict[str, int]] = {}
        self.containing: dict[str, list[str]] = {}
        for name, hn in tree.hypernodes.items():
            for table in (self.allocatable, self.used, self.idle, self.future):
                table[name] = {}
            for n in hn.nodes:
                if n in nodes:
                    self.containing.setdefault(n, []).append(name)
        for n, hns in self.containing.items():  # each node's resources into its HyperNodes
            ns = nodes[n]
            parts = ((self.allocatable, ns.node.allocatable), (self.used, ns.used),
                     (self.idle, ns.idle), (self.future, ns.future_idle()))  # fmt: skip
            for table, res in parts:
                for h in hns:
                    into = table[h]
                    for k, v in res.items():
                        into[k] = into.get(k, 0) + v
        self.min_tier, self.max_tier = tree.tiers[0], tree.tiers[-1]

    def on_place(self, request: Mapping[str, int], node: str, sign: int) -> None:
        for hn in self.containing.get(node, ()):
            used = self.used[hn]
            for k, v in request.items():
                used[k] = used.get(k, 0) + sign * v

    def tier_score(self, tier: int) -> float:
        if self.min_tier == self.max_tier:
            return 1.0
        if self.min_tier <= tier <= self.max_tier:
            return (self.max_tier - tier) / (self.max_tier - self.min_tier)
        return 0.0

    def _binpack(self, request: Mapping[str, int], hn: str) -> float:
        score, wsum = 0.0, 0
        alloc, used = self.allocatable[hn], self.used[hn]
        for res, req in request.items():
            w = self.w.nta_resources.get(res)
            if w is None or req <= 0:
                continue
            if used.get(res, 0) + req > alloc.get(res, 0):
                return 0.0
            if alloc.get(res, 0):
                score += w * (used.get(res, 0) + req) / alloc[res]
            wsum += w
        return score / wsum if wsum > 0 else 0.0

    def task_share(self, hn: str, tasks: Sequence[tuple[str, str]]) -> float:
        """Share of the tasks (name, node) on nodes of ``hn``."""
        return _share(self.tree[hn].nodes, Counter(n for _, n in tasks if n), len(tasks))

    def normal_pod(self, task: Task, node: str) -> float:
        """Tier-faded HyperNode binpack for a pod without a network topology."""
        if not self.w.nta_normal_pods:
            return 0.0
        tiers = range(self.min_tier, self.max_tier + 1)
        weights = {t: self.w.nta_fading ** (t - 1) for t in tiers}
        mine = {self.tree[h].tier: h for h in self.containing.get(node, ())}
        total = 0.0
        for t in tiers:
            hn = mine.get(t)
            s = 1.0 if hn is None else self._binpack(task.requests, hn)
            total += weights[t] * s
        return total / sum(weights.values()) * MAX_SCORE * self.w.nta_weight

    def network_aware(
        self, allocated: str, nodes: Sequence[NodeState], tasks: Sequence[tuple[str, str]]
    ) -> dict[str, float]:
        """LCA-tier scores against the HyperNode the job already uses."""
        if not allocated:
            return {}
        out: dict[str, float] = {}
        mine = set(self.tree.ancestors(allocated))
        memo: dict[str, float] = {"": 0.0, allocated: 1.0}
        for n in nodes:
            hn = self.tree.leaf_of.get(n.name, "")
            if hn not in memo:
                lca = next((a for a in self.tree.ancestors(hn) if a in mine), "")
                memo[hn] = self.tier_score(self.tree[lca].tier) if lca else 0.0
            out[n.name] = memo[hn]
        best = max(out.values(), default=0.0)
        tied = [name for name, s in out.items() if s == best]
        if len(tied) > 1:
            placed = Counter(n for _, n in tasks if n)
            for name in tied:
                leaf = self.tree.leaf_of.get(name, "")
                out[name] += _share(self.tree[leaf].nodes, placed, len(tasks)) if leaf else 0.0
        return {k: v * MAX_SCORE * self.w.nta_weight for k, v in out.items()}

    def order(
        self, request: Mapping[str, int], hns: Sequence[str], tasks: Sequence[tuple[str, str]]
    ) -> dict[str, float]:
        """``HyperNodeOrderFn`` for a sub-job whose tasks together ask ``request``."""
        wanted = {k: v for k, v in request.items() if k in self.w.nta_resources}
        scores = {h: self._binpack(wanted, h) for h in hns}
        best = max(scores.values(), default=0.0)
        tied = [h for h, s in scores.items() if s == best]
        if len(tied) > 1:
            placed = Counter(n for _, n in tasks if n)
            for h in tied:
                scores[h] += _share(self.tree[h].nodes, placed, len(tasks))
        return {h: s * MAX_SCORE * self.w.nta_weight for h, s in scores.items()}


def _share(nodes: frozenset[str], placed: Counter[str], total: int) -> float:
    """``scoreWithTaskNum``: the share of a (sub-)job's tasks already on ``nodes``."""
    if total == 0:
        return 1.0
    return sum(c for n, c in placed.items() if n in nodes) / total


def best_of(scores: Mapping[str, float], order: Sequence[str]) -> str:
    """The highest score; among equals the first of ``order`` (Volcano: at random)."""
    top = max(scores.values())
    return next(n for n in order if n in scores and scores[n] == top)


def is_top(name: str) -> bool:
    return name == TOP
