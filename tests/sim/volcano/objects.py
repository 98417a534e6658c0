"""Compact builders of the Kubernetes objects the Volcano tests use (our words for the
situations of Volcano's own tests), and a runner of one simulated cycle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labeler.sim.volcano.conf import SchedulerConf, parse_conf
from labeler.sim.volcano.model import gang_of, podgroup_from_object
from labeler.sim.volcano.simulate import Verdict, cluster_tree, run_cycle
from labeler.sim.volcano.snapshot import split
from tests.builders import NodeBuilder, PodBuilder, node, pod

# The tiers Volcano's allocate tests open their sessions with.
TEST_CONF = parse_conf(
    """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: network-topology-aware
""",
    "test configuration",
)


def host(name: str, *, cpu: str = "2", memory: str = "4Gi") -> NodeBuilder:
    """A node of these tests: ``cpu`` and ``memory`` allocatable (and its capacity), room for
    10 pods; the builder, to add labels to."""
    return node(name).allocatable(cpu=cpu, memory=memory, pods="10").capacity()


def member(
    name: str, task: str | None = None, *, group: str = "pg1", cpu: str = "2", memory: str = "4G"
) -> PodBuilder:
    """A pod of these tests: namespace c1, a uid, in PodGroup ``group`` (as ``task``), asking
    for ``cpu`` and ``memory``; the builder, to add to (``.on(node)``, more requests)."""
    return (
        pod(name).namespace("c1").uid().volcano_group(group, task).requests(cpu=cpu, memory=memory)
    )


def topology(mode: str | None, tier: int | None = None, name: str | None = None) -> dict[str, Any]:
    nt: dict[str, Any] = {"mode": mode}
    if tier is not None:
        nt["highestTierAllowed"] = tier
    if name is not None:
        nt["highestTierName"] = name
    return nt


def podgroup(
    min_member: int,
    *,
    name: str = "pg1",
    ns: str = "c1",
    queue: str = "q1",
    mode: str | None = None,
    tier: int | None = None,
    tier_name: str | None = None,
    phase: str | None = "Inqueue",
    min_task_member: Mapping[str, int] | None = None,
    subgroups: Sequence[Mapping[str, Any]] = (),
    min_resources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"queue": queue, "minMember": min_member}
    if mode is not None:
        spec["networkTopology"] = topology(mode, tier, tier_name)
    if min_task_member:
        spec["minTaskMember"] = dict(min_task_member)
    if subgroups:
        spec["subGroupPolicy"] = [dict(s) for s in subgroups]
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    obj = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }
    if phase is not None:  # None: no status, as a PodGroup is created
        obj["status"] = {"phase": phase}
    return obj


def subgroup(
    name: str,
    keys: Sequence[str],
    mode: str | None = None,
    tier: int | None = None,
    *,
    size: int = 1,
    min_subgroups: int = 0,
    selector: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "subGroupSize": size,
        "minSubGroups": min_subgroups,
        "matchLabelKeys": list(keys),
    }
    if mode is not None:
        out["networkTopology"] = topology(mode, tier)
    if selector is not None:
        out["labelSelector"] = {"matchLabels": dict(selector)}
    return out


def hypernode(
    name: str,
    tier: int,
    *,
    nodes: Sequence[str] = (),
    children: Sequence[str] = (),
    tier_name: str | None = None,
) -> dict[str, Any]:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    spec: dict[str, Any] = {"tier": tier, "members": members}
    if tier_name is not None:
        spec["tierName"] = tier_name
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


def queue(name: str = "q1", *, weight: int = 1, capability: Mapping[str, str] | None = None,
          state: str = "Open") -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {"weight": weight}
    if capability:
        spec["capability"] = dict(capability)
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }


def job(*tasks: Mapping[str, Any], name: str = "j", ns: str = "ns", **spec: Any) -> dict[str, Any]:
    """A Volcano Job (batch.volcano.sh) of these tasks; ``spec``, the rest of its spec."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"tasks": [dict(t) for t in tasks], **spec},
    }


def task(name: str, replicas: int, cpu: str, *, gpus: int = 0, **extra: Any) -> dict[str, Any]:
    """One task of a Job: ``replicas`` pods of one container asking for ``cpu`` (and
    ``gpus`` NVIDIA GPUs); ``extra``, the rest of the task (minAvailable, partitionPolicy)."""
    resources: dict[str, Any] = {"requests": {"cpu": cpu}}
    if gpus:
        resources["requests"]["nvidia.com/gpu"] = str(gpus)
        # Volcano's webhook refuses an extended resource without a limit equal to its request.
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    container = {"name": "c", "image": "x", "resources": resources}
    return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [container]}},
            **extra}  # fmt: skip


def two_racks(
    *s1: str, cpu: str = "2", memory: str = "4Gi", tier_names: Mapping[int, str] | None = None
) -> list[dict[str, Any]]:
    """The tier-1 HyperNodes s0 = {s0-n1, s0-n2} and s1 (``s1``'s nodes, else s1-n3 and
    s1-n4) under the tier-2 s2; nodes of ``cpu`` and ``memory``; ``tier_names``, the name
    of each tier (none by default)."""
    names = tier_names or {}
    s1 = s1 or ("s1-n3", "s1-n4")
    return [
        *(host(n, cpu=cpu, memory=memory).obj() for n in ("s0-n1", "s0-n2", *s1)),
        hypernode("s0", 1, nodes=("s0-n1", "s0-n2"), tier_name=names.get(1)),
        hypernode("s1", 1, nodes=s1, tier_name=names.get(1)),
        hypernode("s2", 2, children=("s0", "s1"), tier_name=names.get(2)),
    ]


def three_tiers(*, tier_names: Mapping[int, str] | None = None) -> list[dict[str, Any]]:
    """s0 (tier 3) over s1, s2 (tier 2) over s3…s6 (tier 1), two nodes each."""
    names = tier_names or {}
    out: list[dict[str, Any]] = []
    for leaf in ("s3", "s4", "s5", "s6"):
        out += [host(f"{leaf}-n1").obj(), host(f"{leaf}-n2").obj()]
        out.append(hypernode(leaf, 1, nodes=(f"{leaf}-n1", f"{leaf}-n2"), tier_name=names.get(1)))
    out.append(hypernode("s1", 2, children=("s3", "s4"), tier_name=names.get(2)))
    out.append(hypernode("s2", 2, children=("s5", "s6"), tier_name=names.get(2)))
    out.append(hypernode("s0", 3, children=("s1", "s2"), tier_name=names.get(3)))
    return out


def selector_cluster() -> list[dict[str, Any]]:
    """Two tier-1 HyperNodes of one node each; only s1-n2 is labelled for the master."""
    return [
        host("s0-n1").obj(),
        host("s1-n2").labels({"nodeRole": "master"}).obj(),
        hypernode("s0", 1, nodes=("s0-n1",)),
        hypernode("s1", 1, nodes=("s1-n2",)),
    ]


def simulate(items: Sequence[Mapping[str, Any]], conf: SchedulerConf = TEST_CONF) -> Verdict:
    """One cycle for the PodGroup among ``items`` (the only one, or the first)."""
    objects = split(items, "test")
    where, obj = next(iter(objects.podgroups.values()))
    gang = gang_of(podgroup_from_object(obj, where), objects.cluster.pods, "test")
    return run_cycle(gang, objects.cluster, conf, cluster_tree(objects.cluster)).verdict


def bound(v: Verdict) -> dict[str, str]:
    return {p.pod: p.node for p in v.binds}


def binds_as(items: Sequence[Mapping[str, Any]], expected: int | dict[str, str]) -> None:
    """One cycle over ``items`` and queue q1 binds ``expected``: that many pods, or exactly
    these pods on these nodes."""
    verdict = simulate([*items, queue()])
    if isinstance(expected, int):
        assert len(verdict.binds) == expected, verdict.message
    else:
        assert bound(verdict) == expected
