"""Volcano's ``TestAllocateWithPartitionPolicyNetworkTopology`` (allocate_test.go), as ours.

Sub-groups (``subGroupPolicy``: the pods sharing a label value form one sub-group of
``subGroupSize`` pods, ``minSubGroups`` of them needed) with their own network topology
inside the job's. The same situations and expected bindings, in our words; the session runs
gang, predicates and network-topology-aware. Two upstream fixtures list HyperNodes only by
tier (no objects); where that matters (the job then sees no HyperNode below the cluster
top) they are written here as HyperNodes that hold no nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.builders import pod
from tests.sim.volcano.objects import (
    binds_as,
    bound,
    host,
    hypernode,
    member,
    podgroup,
    queue,
    selector_cluster,
    simulate,
    subgroup,
    three_tiers,
    two_racks,
)

SPEC, INSTANCE = "volcano.sh/task-spec", "volcano.sh/task-instance"


def p(
    name: str, labels: Mapping[str, str], node: str = "", cpu: str = "2", mem: str = "4G"
) -> dict[str, Any]:
    phase = "Running" if node else "Pending"
    return (
        pod(name)
        .namespace("c1")
        .uid()
        .labels(labels)
        .volcano_group("pg1")
        .requests(cpu=cpu, memory=mem)
        .on(node)
        .phase(phase)
        .obj()
    )


def roles(*pairs: tuple[str, str] | tuple[str, str, str]) -> list[dict[str, Any]]:
    """(name, task-spec[, node]) pods."""
    return [p(x[0], {SPEC: x[1]}, x[2] if len(x) > 2 else "") for x in pairs]


def mw() -> list[dict[str, Any]]:
    return roles(("p1", "master"), ("p2", "worker"), ("p3", "worker"))


def rerun(a: str = "s0-n1", b: str = "s0-n2") -> list[dict[str, Any]]:
    return roles(("p1", "master", a), ("p2", "worker", b), ("p3", "worker"))


def three_racks() -> list[dict[str, Any]]:
    """The tier-1 s0 = {s0-n1, s0-n2}, s1 = {s1-n3, s1-n4} and s2 = {s2-n5} under the tier-2
    s3."""
    return [
        *(host(n).obj() for n in ("s0-n1", "s0-n2", "s1-n3", "s1-n4", "s2-n5")),
        hypernode("s0", 1, nodes=("s0-n1", "s0-n2")),
        hypernode("s1", 1, nodes=("s1-n3", "s1-n4")),
        hypernode("s2", 1, nodes=("s2-n5",)),
        hypernode("s3", 2, children=("s0", "s1", "s2")),
    ]


def empty_tiers() -> list[dict[str, Any]]:
    """Tier 1 and 2 HyperNodes that hold no node: only the cluster top holds nodes."""
    return [
        *(host(n).obj() for n in ("s0-n1", "s0-n2", "s1-n3", "s1-n4")),
        hypernode("s0", 1),
        hypernode("s1", 1),
        hypernode("s2", 2),
    ]


def by_spec(mode: str | None, tier: int | None = None, **kw: Any) -> dict[str, Any]:
    return subgroup("task1", [SPEC], mode, tier, **kw)


def by_instance(mode: str | None, tier: int | None = None, **kw: Any) -> dict[str, Any]:
    return subgroup("task2", [INSTANCE], mode, tier, **kw)


def pg(n: int, mode: str | None, tier: int | None, *subs: dict[str, Any]) -> dict[str, Any]:
    return podgroup(n, mode=mode, tier=tier, subgroups=subs)


def masters_and_instances(
    n_masters: int, *, running: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Masters (one task-spec each) and two pairs of instance workers, 2 CPU / 4Gi each."""
    running = running or {}
    specs = ["master"] + [f"master{i}" for i in range(2, n_masters + 1)]
    out = [
        p(f"p{i + 1}", {SPEC: s}, running.get(f"p{i + 1}", ""), mem="4Gi")
        for i, s in enumerate(specs)
    ]
    k = n_masters
    for inst in ("worker", "worker", "worker2", "worker2"):
        k += 1
        out.append(p(f"p{k}", {INSTANCE: inst}, mem="4Gi"))
    return out


CASES: list[tuple[str, list[dict[str, Any]], int | dict[str, str]]] = [
    (
        "job hard 2, sub-groups soft: enough resources",
        [pg(3, "hard", 2, by_spec("soft", 0)), *mw(), *two_racks()],
        3,
    ),
    (
        "job hard 1, sub-groups soft: minAvailable below the replicas",
        [
            pg(1, "hard", 1, by_spec("soft", 0)),
            *roles(("p1", "master"), ("p2", "worker")),
            *two_racks(),
        ],
        2,
    ),
    (
        "job hard 1, sub-groups soft: the HyperNode whose node matches the nodeSelector",
        [
            pg(1, "hard", 1, by_spec("soft", 0)),
            member("p1", "master").node_selector({"nodeRole": "master"}).obj(),
            *selector_cluster(),
        ],
        {"c1/p1": "s1-n2"},
    ),
    (
        "job hard 2, sub-groups soft, running in a full HyperNode: the new pod goes next door",
        [pg(2, "hard", 2, by_spec("soft", 0)), *rerun(), *two_racks()],
        1,
    ),
    (
        "… the same with minAvailable equal to the replicas",
        [pg(3, "hard", 2, by_spec("soft", 0)), *rerun(), *two_racks()],
        1,
    ),
    (
        "job hard 2, sub-groups soft, three tiers: beyond the full tier-1 HyperNode",
        [pg(2, "hard", 2, by_spec("soft", 0)), *rerun("s3-n1", "s3-n2"), *three_tiers()],
        1,
    ),
    (
        "job soft, sub-groups hard 1 of 2 and 1 pods: each in its own HyperNode",
        [
            pg(3, "soft", 0, by_spec("hard", 1, size=2), by_instance("hard", 1, size=1)),
            *roles(("p1", "master"), ("p2", "master")),
            p("p3", {INSTANCE: "worker"}),
            *two_racks("s1-n3"),
        ],
        3,
    ),
    (
        "job soft, sub-groups hard 1: minAvailable below the replicas",
        [
            pg(1, "soft", 0, by_spec("hard", 1)),
            *roles(("p1", "master"), ("p2", "worker")),
            *two_racks(),
        ],
        2,
    ),
    (
        "job soft, sub-groups hard 1, HyperNodes without nodes: nothing satisfies tier 1",
        [
            pg(3, "soft", 0, by_spec("hard", 1)),
            *roles(("p1", "master"), ("p2", "worker"), ("p3", "worker"), ("p4", "worker")),
            *empty_tiers(),
        ],
        0,
    ),
    (
        "job soft, sub-groups hard 1, rerun: the worker joins its sub-group's HyperNode",
        [pg(2, "soft", 0, by_spec("hard", 1)), *rerun("s0-n1", "s1-n3"), *two_racks()],
        {"c1/p3": "s1-n4"},
    ),
    (
        "job soft, sub-groups hard 2, three tiers: the worker's tier-2 HyperNode is full",
        [
            pg(2, "soft", 0, by_spec("hard", 2)),
            *roles(
                ("p1", "master", "s3-n1"),
                ("p2", "worker", "s3-n2"),
                ("p3", "worker", "s4-n1"),
                ("p4", "worker", "s4-n2"),
                ("p5", "worker"),
            ),
            *three_tiers(),
        ],
        0,
    ),
    (
        "job hard 2, sub-groups hard 1: within the allowed tier",
        [pg(3, "hard", 2, by_spec("hard", 1)), *mw(), *two_racks()],
        3,
    ),
    (
        "job hard 2, sub-groups hard 1 of 1 and 2 pods: the pair in the two-node HyperNode",
        [
            pg(3, "hard", 2, by_spec("hard", 1, size=1), by_instance("hard", 1, size=2)),
            p("p1", {SPEC: "master"}),
            p("p2", {INSTANCE: "worker"}),
            p("p3", {INSTANCE: "worker"}),
            *two_racks("s1-n3"),
        ],
        3,
    ),
    (
        "job hard 2, sub-groups hard 1: two pods, several HyperNodes",
        [
            pg(2, "hard", 2, by_spec("hard", 1)),
            *roles(("p1", "master"), ("p2", "worker")),
            *two_racks(),
        ],
        2,
    ),
    (
        "job hard 2, sub-groups hard 1: minAvailable below the replicas",
        [
            pg(1, "hard", 2, by_spec("hard", 1, size=1)),
            *roles(("p1", "master"), ("p2", "worker")),
            *two_racks(),
        ],
        2,
    ),
    (
        "job hard 2, sub-groups hard 1, rerun: the worker joins its sub-group's HyperNode",
        [pg(2, "hard", 2, by_spec("hard", 1)), *rerun("s0-n1", "s1-n3"), *two_racks()],
        {"c1/p3": "s1-n4"},
    ),
    (
        "job hard 2, sub-groups hard 2, rerun, minAvailable equal to the replicas",
        [pg(3, "hard", 2, by_spec("hard", 2)), *rerun(), *two_racks()],
        1,
    ),
    (
        "job hard 3, sub-groups hard 2, three tiers, rerun",
        [pg(2, "hard", 3, by_spec("hard", 2)), *rerun("s3-n1", "s3-n2"), *three_tiers()],
        1,
    ),
    (
        "job hard 2, sub-groups hard 1, rerun in a full HyperNode: no room in tier 1",
        [pg(2, "hard", 2, by_spec("hard", 1)), *rerun(), *two_racks()],
        0,
    ),
    (
        "job hard 3, sub-groups hard 2, three tiers: the worker's tier-2 HyperNode is full",
        [
            pg(2, "hard", 3, by_spec("hard", 2)),
            *roles(
                ("p1", "master", "s3-n1"),
                ("p2", "worker", "s3-n2"),
                ("p3", "worker", "s4-n1"),
                ("p4", "worker", "s4-n2"),
                ("p5", "worker"),
            ),
            *three_tiers(),
        ],
        0,
    ),
    (
        "job hard 3, sub-groups hard 2, only tier-1 HyperNodes: the cluster top is tier 2",
        [
            pg(2, "hard", 3, by_spec("hard", 2)),
            *rerun(),
            *[x for x in two_racks() if x["metadata"]["name"] != "s2"],
        ],
        1,
    ),
    (
        "minSubGroups: one master and both instance pairs, each in a tier-1 HyperNode",
        [
            pg(
                5,
                "hard",
                2,
                by_spec("hard", 1, size=1, min_subgroups=1),
                by_instance("hard", 1, size=2, min_subgroups=2),
            ),
            *masters_and_instances(1),
            *three_racks(),
        ],
        5,
    ),
    (
        "minSubGroups 1 of 2 instance pairs, minAvailable 3: one pair is enough",
        [
            pg(
                3,
                "hard",
                2,
                by_spec("hard", 1, size=1, min_subgroups=1),
                by_instance("hard", 1, size=2, min_subgroups=1),
            ),
            *masters_and_instances(1),
            *two_racks("s1-n3"),
        ],
        3,
    ),
    (
        "minSubGroups 2 masters and 1 pair: the HyperNodes hold what minSubGroups needs",
        [
            pg(
                3,
                "hard",
                2,
                by_spec("hard", 1, size=1, min_subgroups=2),
                by_instance("hard", 1, size=2, min_subgroups=1),
            ),
            *masters_and_instances(4),
            *two_racks(),
        ],
        4,
    ),
    (
        "minMember 5 cannot be met in four nodes",
        [
            pg(
                5,
                "hard",
                2,
                by_spec("hard", 1, size=1, min_subgroups=1),
                by_instance("hard", 1, size=2, min_subgroups=1),
            ),
            *masters_and_instances(1),
            *two_racks(),
        ],
        0,
    ),
    (
        "minSubGroups 2 instance pairs plus a master cannot fit four nodes",
        [
            pg(
                3,
                "hard",
                2,
                by_spec("hard", 1, size=1, min_subgroups=1),
                by_instance("hard", 1, size=2, min_subgroups=2),
            ),
            *masters_and_instances(1),
            *two_racks(),
        ],
        0,
    ),
    (
        "minSubGroups, rerun: the worker joins its sub-group's HyperNode",
        [
            pg(2, "hard", 2, by_spec("hard", 1, size=2, min_subgroups=1)),
            *rerun("s0-n1", "s1-n3"),
            *two_racks(),
        ],
        {"c1/p3": "s1-n4"},
    ),
    (
        "minSubGroups, rerun: the worker sub-group's HyperNode is full",
        [
            pg(2, "hard", 2, by_spec("hard", 1, size=2, min_subgroups=1)),
            *roles(
                ("p1", "master", "s0-n1"),
                ("p2", "worker", "s1-n3"),
                ("p3", "worker", "s1-n4"),
                ("p4", "worker"),
            ),
            *two_racks(),
        ],
        0,
    ),
    (
        "minSubGroups 2 of 2-pod sub-groups in tier 2, rerun",
        [
            pg(4, "hard", 2, by_spec("hard", 2, size=2, min_subgroups=2)),
            *roles(
                ("p1", "master", "s0-n1"),
                ("p2", "worker", "s0-n2"),
                ("p3", "worker"),
                ("p4", "master"),
            ),
            *two_racks(),
        ],
        2,
    ),
    (
        "minSubGroups, two masters already running: the rest is placed",
        [
            pg(
                3,
                "hard",
                2,
                by_spec("hard", 1, size=1, min_subgroups=2),
                by_instance("hard", 1, size=2, min_subgroups=1),
            ),
            *masters_and_instances(4, running={"p3": "s0-n1", "p4": "s0-n2"}),
            *two_racks(),
        ],
        2,
    ),
    (
        "rerun: a 4-pod sub-group with two pending pods is sized by both",
        [
            pg(4, "hard", 2, by_spec("hard", 1, size=4)),
            *roles(
                ("p1", "worker", "s0-n1"),
                ("p2", "worker", "s0-n2"),
                ("p3", "worker"),
                ("p4", "worker"),
            ),
            *two_racks(cpu="4", memory="8Gi"),
        ],
        2,
    ),
    (
        "rerun: a 3-pod sub-group with one pending pod",
        [
            pg(3, "hard", 2, by_spec("hard", 1, size=3)),
            *roles(("p1", "worker", "s0-n1"), ("p2", "worker", "s0-n2"), ("p3", "worker")),
            *two_racks("s1-n3", cpu="4", memory="8Gi"),
        ],
        1,
    ),
    (
        "rerun: two sub-groups with different numbers of pending pods",
        [
            pg(6, "hard", 2, by_spec("hard", 1, size=3), by_instance("hard", 1, size=3)),
            p("p1", {SPEC: "master"}, "s0-n1"),
            p("p2", {SPEC: "master"}, "s0-n2"),
            p("p3", {SPEC: "master"}),
            p("p4", {INSTANCE: "worker"}, "s1-n3"),
            p("p5", {INSTANCE: "worker"}),
            p("p6", {INSTANCE: "worker"}),
            *two_racks(cpu="4", memory="8Gi"),
        ],
        3,
    ),
    (
        "rerun: pending pods of different sizes in one sub-group",
        [
            pg(3, "hard", 1, by_spec("hard", 1, size=3)),
            p("p1-running", {SPEC: "worker"}, "s0-n1"),
            p("p2-pending-small", {SPEC: "worker"}),
            p("p3-pending-large", {SPEC: "worker"}, cpu="4", mem="8G"),
            host("s0-n1", cpu="10", memory="20Gi").obj(),
            host("s0-n2", cpu="10", memory="20Gi").obj(),
            hypernode("s0", 1, nodes=("s0-n1", "s0-n2")),
        ],
        2,
    ),
    (
        "rerun: not enough room left for the pending pods",
        [
            pg(3, "hard", 1, by_spec("hard", 1, size=3)),
            p("p1", {SPEC: "worker"}, "s0-n1", cpu="4"),
            p("p2", {SPEC: "worker"}, cpu="4"),
            p("p3", {SPEC: "worker"}, cpu="4"),
            host("s0-n1", cpu="4", memory="8Gi").obj(),
            host("s0-n2", cpu="4", memory="8Gi").obj(),
            hypernode("s0", 1, nodes=("s0-n1", "s0-n2")),
        ],
        0,
    ),
    (
        "rerun: a sub-group bounded by tier 2",
        [
            pg(4, "hard", 2, by_spec("hard", 2, size=4)),
            *roles(
                ("p1", "worker", "s0-n1"),
                ("p2", "worker", "s0-n2"),
                ("p3", "worker"),
                ("p4", "worker"),
            ),
            *two_racks(cpu="4", memory="8Gi"),
        ],
        2,
    ),
    (
        "sub-groups without any network topology: placed like any gang",
        [
            pg(2, None, None, subgroup("worker", [SPEC], size=1, min_subgroups=2)),
            p("p1", {SPEC: "worker-0"}),
            p("p2", {SPEC: "worker-1"}),
            host("n1").obj(),
            host("n2").obj(),
        ],
        2,
    ),
]


@pytest.mark.parametrize(("items", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_allocate_with_partition_policy_network_topology(
    items: list[dict[str, Any]], expected: int | dict[str, str]
) -> None:
    binds_as(items, expected)


def test_a_policy_without_match_label_keys_holds_no_pod() -> None:
    """Volcano files a pod under a policy only when the policy gives it a match value: with
    no matchLabelKeys every pod stays in the job's default sub-job, so the policy's
    minSubGroups is never met and the gang waits; with the key, the same pods bind."""
    pods = roles(("p1", "worker"), ("p2", "worker"))
    without = subgroup("worker", [], size=1, min_subgroups=1)
    verdict = simulate([*two_racks(), *pods, queue(), podgroup(2, subgroups=[without])])
    assert bound(verdict) == {}
    assert verdict.message.startswith("2/2 tasks in gang unschedulable")
    keyed = subgroup("worker", [SPEC], size=1, min_subgroups=1)
    verdict = simulate([*two_racks(), *pods, queue(), podgroup(2, subgroups=[keyed])])
    assert len(verdict.binds) == 2
