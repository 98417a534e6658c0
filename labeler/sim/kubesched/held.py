"""The domain a group's pods already running hold it to, and what kube-scheduler says when
they hold it to none.

TopologyPlacement (``getScheduledPodsTopologyDomain``) walks the running (bound or assumed)
pods of the group's subtree: a pod whose node is unknown or lacks the topology key is an
error naming that pod; a pod in another domain than the first one met is ``more than 1
domain found for pod group: FIRST, OTHER``. It meets the pods in no set order: the
CompositePodGroups' children come from a Go map (``getChildren``) and each PodGroup's
pods from another (``scheduledPods``), so every subtree's pods come together but in any
order of subtrees, and a PodGroup's pods in any order. Which message it writes, when
several are possible, is therefore a draw: ``held`` lists every one it can write.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labeler.sim.kubesched import objects as ob
from labeler.sim.kubesched.objects import Group, Objects
from labeler.sim.kubesched.state import State

HELD_ERROR = "cannot determine domain for already scheduled pods: "
TWO_DOMAINS = "more than 1 domain found for pod group: "

Kind = tuple[bool, str]
"""A running pod as the walk sees it: (True, its domain) or (False, the error naming it)."""


@dataclass
class Held:
    domains: set[str] = field(default_factory=set)
    """The domains of the key where the subtree's pods run."""
    errors: list[str] = field(default_factory=list)
    """Every error kube-scheduler may write (HELD_ERROR first), sorted; empty when the pods
    hold the group to one domain or none."""


def _kinds(group: Group, key: str, state: State, objs: Objects) -> dict[str, list[Kind]]:
    """Per PodGroup of the subtree, its running pods' kinds, each kind once."""
    out: dict[str, list[Kind]] = {}
    for g in ob.subtree(objs, group):
        if g.kind != ob.PODGROUP:
            continue
        kinds: list[Kind] = []
        for pod, node in state.scheduled(g.namespace, [g.name]):
            labels = state.labels(node)
            if labels is None:
                why = f'getting node for pod {pod.ref}: nodeinfo not found for node name "{node}"'
                kind: Kind = (False, why)
            elif key not in labels:
                kind = (False, f"no topology domain found for pod {pod.ref}")
            else:
                kind = (True, labels[key])
            if kind not in kinds:
                kinds.append(kind)
        out[g.name] = kinds
    return out


def _chains(group: Group, objs: Objects) -> dict[str, list[str]]:
    """Per PodGroup of the subtree, the groups from ``group`` down to it."""
    out: dict[str, list[str]] = {}

    def walk(g: Group, above: list[str]) -> None:
        chain = [*above, g.name]
        if g.kind == ob.PODGROUP:
            out[g.name] = chain
        for child in ob.children(objs, g):
            walk(child, chain)

    walk(group, [])
    return out


def held(group: Group, state: State, objs: Objects) -> Held:
    """What the running pods of ``group``'s subtree say about its domain (``group.key``)."""
    assert group.key is not None
    kinds = _kinds(group, group.key, state, objs)
    chains = _chains(group, objs)
    below: dict[str, set[Kind]] = {}
    for leaf, chain in chains.items():
        for name in chain:
            below.setdefault(name, set()).update(kinds[leaf])
    said: set[str] = set()
    for first_leaf, firsts in kinds.items():
        for ok, first in firsts:
            if not ok:  # met first
                said.add(first)
                continue
            for leaf, others in kinds.items():
                if leaf != first_leaf:
                    # the first pod's side of the two leaves' common parent must be done
                    # before the other side starts: all of it in the first pod's domain
                    a, b = chains[first_leaf], chains[leaf]
                    depth = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
                    if below[a[depth]] != {(True, first)}:
                        continue
                for ok2, other in others:
                    if not ok2:
                        said.add(other)
                    elif other != first:
                        said.add(f"{TWO_DOMAINS}{first}, {other}")
    domains = {v for leaf in kinds.values() for ok, v in leaf if ok}
    return Held(domains, sorted(HELD_ERROR + s for s in said))
