"""Each rule of Volcano's allocate and enqueue, as the code has it, with the words it uses.

Predicates (resources, the ``pods`` count, nodeSelector, node affinity, taints,
unschedulable and NotReady nodes), the gang (minAvailable, minTaskMember, all or nothing,
the role skip), queues (state, capability, proportion's share, overcommit) and the
configuration (no gang, no allocate, no enqueue)."""

from __future__ import annotations

from typing import Any

import pytest

from labeler.base.errors import InputError
from labeler.sim.volcano.conf import parse_conf
from labeler.sim.volcano.model import podgroup_from_object
from tests.builders import node
from tests.sim.volcano.objects import TEST_CONF, bound, host, member, podgroup, queue, simulate

DEFAULTS = parse_conf(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: overcommit
  - name: predicates
  - name: proportion
""",
    "test",
)

MAINT = {"key": "maint", "value": "x", "effect": "NoSchedule"}


def one(pod_obj: dict[str, Any], *nodes: dict[str, Any]) -> tuple[dict[str, str], str]:
    verdict = simulate([podgroup(1), pod_obj, *nodes, queue()])
    return bound(verdict), verdict.message


@pytest.mark.parametrize(
    ("the_pod", "the_node", "reason"),
    [
        (
            member("p", cpu="3").obj(),
            host("n").obj(),
            "1 Insufficient cpu",
        ),
        (
            member("p").requests({"nvidia.com/gpu": "1"}).obj(),
            host("n").obj(),
            "1 Insufficient nvidia.com/gpu",
        ),
        (
            member("p", cpu="1").obj(),
            node("n").allocatable(cpu="2", memory="4Gi", pods="0").capacity().obj(),
            "1 node(s) pod number exceeded",
        ),
        (
            member("p", cpu="1").obj(),
            node("n").allocatable(cpu="2", memory="4Gi").capacity().obj(),
            "1 node(s) pod number exceeded",
        ),
        (
            member("p", cpu="1").node_selector({"gpu": "h100"}).obj(),
            host("n").obj(),
            "1 node(s) didn't match Pod's node affinity/selector",
        ),
        (
            member("p", cpu="1").obj(),
            host("n").taints([MAINT]).obj(),
            "1 node(s) had untolerated taint {maint: x}",
        ),
        (
            member("p", cpu="1").obj(),
            host("n").unschedulable(True).obj(),
            "1 node(s) were unschedulable",
        ),
        (
            member("p", cpu="1").obj(),
            host("n").ready(False).obj(),
            "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
        ),
    ],
)
def test_a_node_that_fails_a_predicate_takes_no_pod(
    the_pod: dict[str, Any], the_node: dict[str, Any], reason: str
) -> None:
    got, message = one(the_pod, the_node)
    assert got == {}
    assert message.endswith(f"Origin reason is p: 0/1 nodes are unavailable: {reason}.")


def test_tolerations_and_required_affinity_let_the_pod_in() -> None:
    tolerant = member("p", cpu="1").obj()
    tolerant["spec"]["tolerations"] = [{"key": "maint", "operator": "Exists"}]
    tainted = host("n").taints([MAINT]).obj()
    assert one(tolerant, tainted)[0] == {"c1/p": "n"}
    pinned = member("p", cpu="1").obj()
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    pinned["spec"]["affinity"] = {"nodeAffinity": required}
    got, _ = one(
        pinned,
        node("a")
        .labels({"zone": "z1"})
        .allocatable(cpu="2", memory="4Gi", pods="10")
        .capacity()
        .obj(),
        node("b")
        .labels({"zone": "z2"})
        .allocatable(cpu="2", memory="4Gi", pods="10")
        .capacity()
        .obj(),
    )
    assert got == {"c1/p": "b"}


def test_the_gang_binds_all_or_nothing_with_volcano_s_message() -> None:
    items = [
        podgroup(3),
        *(member(f"p{i}", "w").obj() for i in range(3)),
        host("a").obj(),
        host("b").obj(),
        queue(),
    ]
    verdict = simulate(items)
    assert verdict.binds == []
    # p0, p1 fitted in the dry run; p2 did not; the rest of the role was skipped
    assert verdict.message == (
        "1/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; "
        "Pending: 1 Unschedulable, 2 Schedulable. Origin reason is p2: 0/2 nodes are "
        "unavailable: 2 Insufficient cpu."
    )
    items[0] = podgroup(2)
    assert len(simulate(items).binds) == 2  # minAvailable 2: two bound, the third waits


def test_a_failed_role_skips_its_other_pods() -> None:
    """When a worker fits nowhere but the gang can still be complete, the other workers are
    not tried again this cycle (Volcano's per-role error cache); other roles go on."""
    items = [
        podgroup(1),
        member("w0", "worker", cpu="4").obj(),
        member("w1", "worker", cpu="1").obj(),
        member("z", "master", cpu="1").obj(),
        host("a").obj(),
        queue(),
    ]
    verdict = simulate(items)
    assert bound(verdict) == {"c1/z": "a"}
    assert verdict.job is not None
    skipped = verdict.job.fit_errors["w1"].err
    assert skipped == "Task w1 with role spec worker has already predicated failed, skip"


def test_min_task_member_needs_each_role() -> None:
    """minTaskMember: the master fits, the one worker the gang needs does not: no bind."""
    items = [
        podgroup(2, min_task_member={"master": 1, "worker": 1}),
        member("m", "master", cpu="1").obj(),
        member("w0", "worker", cpu="4").obj(),
        host("a").obj(),
        queue(),
    ]
    assert simulate(items).binds == []
    items[0] = podgroup(1)
    assert bound(simulate(items)) == {"c1/m": "a"}


def test_without_gang_pods_bind_one_by_one() -> None:
    no_gang = parse_conf("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n", "t")
    items = [
        podgroup(3),
        *(member(f"p{i}").obj() for i in range(3)),
        host("a").obj(),
        host("b").obj(),
        queue(),
    ]
    assert len(simulate(items, no_gang).binds) == 2


def test_pending_podgroup_needs_enqueue_and_a_queue_with_room() -> None:
    items = [
        podgroup(1, queue="small", phase="Pending", min_resources={"cpu": "2", "pods": "1"}),
        member("p").obj(),
        host("a").obj(),
        queue("small", capability={"cpu": "1"}),
    ]
    verdict = simulate(items, DEFAULTS)
    assert verdict.binds == []
    assert verdict.why == [
        "the PodGroup stays Pending, not enqueued: queue resource quota insufficient: "
        "insufficient cpu"
    ]
    items[-1] = queue("small", capability={"cpu": "2"})
    assert len(simulate(items, DEFAULTS).binds) == 1
    items[-1] = queue("small", state="Closed")
    assert simulate(items, DEFAULTS).why == [
        "the PodGroup stays Pending, not enqueued: queue small is Closed, not Open"
    ]


def test_without_min_resources_a_podgroup_always_enqueues() -> None:
    items = [
        podgroup(1, queue="small", phase="Pending"),
        member("p").obj(),
        host("a").obj(),
    ]
    items.append(queue("small", capability={"cpu": "1"}))
    verdict = simulate(items, DEFAULTS)
    # enqueued, but proportion's allocatable keeps the queue within its capability
    assert verdict.why == [] and verdict.binds == []


def test_overcommit_refuses_what_the_cluster_cannot_hold() -> None:
    items = [
        podgroup(1, queue="q1", phase="Pending", min_resources={"cpu": "5"}),
        member("p").obj(),
        host("a").obj(),  # 2 CPUs: 1.2 × 2 = 2.4 < 5
        queue("q1"),
    ]
    assert simulate(items, DEFAULTS).why == [
        "the PodGroup stays Pending, not enqueued: resource in cluster is overused: overused cpu"
    ]


def test_proportion_shares_the_cluster_between_queues_by_weight() -> None:
    """Two queues of equal weight both asking for the whole cluster: each deserves half,
    so the gang asking for more than half is not allocatable this cycle."""
    items = [
        podgroup(2, queue="a"),
        member("p0").obj(),
        member("p1").obj(),
        podgroup(2, name="other", queue="b"),
        member("o0", group="other").obj(),
        member("o1", group="other").obj(),
        host("n1").obj(),
        host("n2").obj(),
        queue("a"),
        queue("b"),
    ]
    assert simulate(items, DEFAULTS).binds == []
    items[-1] = queue("b", weight=0)  # only queue a has weight: it deserves everything
    assert len(simulate(items, DEFAULTS).binds) == 2


def test_no_allocate_action_binds_nothing_and_no_enqueue_lets_pending_through() -> None:
    items = [
        podgroup(1, phase="Pending", min_resources={"cpu": "1"}),
        member("p").obj(),
        host("a").obj(),
        queue(),
    ]
    only_enqueue = parse_conf("actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n", "t")
    assert simulate(items, only_enqueue).why == [
        "the scheduler configuration has no allocate action: nothing is ever bound"
    ]
    assert len(simulate(items, TEST_CONF).binds) == 1


def test_pipelined_when_the_room_is_held_by_a_terminating_pod() -> None:
    leaving = member("old", group="x").on("a").phase("Running").obj()
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    items = [
        podgroup(1),
        member("p").obj(),
        leaving,
        host("a").obj(),
        queue(),
    ]
    verdict = simulate(items)
    assert verdict.binds == [] and [p.node for p in verdict.pipelined] == ["a"]


def test_an_inqueue_podgroup_reserves_a_thousandth_of_its_gpus() -> None:
    """v1.15.0's GetInqueueResource reads a scalar of minResources in whole units against
    milli-units: another Inqueue PodGroup's 8 GPUs hold back 0.008 of a GPU, enough to
    refuse a PodGroup that needs the queue's whole capability, not one that needs less."""
    gpu = {"nvidia.com/gpu": "8"}
    p = member("p")
    items = [
        podgroup(1, queue="gpu", phase="Pending", min_resources=gpu),
        p.requests(gpu).obj(),
        podgroup(1, name="other", queue="gpu", min_resources={"cpu": "1", **gpu}),
        node("a").allocatable(cpu="4", memory="4Gi", pods="10").gpus(16).capacity().obj(),
        queue("gpu", capability={"nvidia.com/gpu": "12"}),
    ]
    assert bound(simulate(items, DEFAULTS)) == {"c1/p": "a"}
    items[-1] = queue("gpu", capability={"nvidia.com/gpu": "8"})
    assert simulate(items, DEFAULTS).why == [
        "the PodGroup stays Pending, not enqueued: queue resource quota insufficient: "
        "insufficient nvidia.com/gpu"
    ]


def test_the_plugin_option_keys_are_v1_15s() -> None:
    """conf.PluginOption's yaml tags: v1.15.0 spells the cluster order switch
    EnabledClusterOrder (later releases enabledClusterOrder); a key it lacks is refused."""
    conf = "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n    {}: true\n"
    for key in ("EnabledClusterOrder", "enabledClusterOrder", "enabledHyperNodeOrder"):
        assert parse_conf(conf.format(key), "t").tiers
    with pytest.raises(InputError, match="unknown key"):
        parse_conf(conf.format("enableClusterOrder"), "t")


def test_min_resources_drop_the_quota_names_the_job_controller_writes() -> None:
    """NewResource skips count/ quotas, and a requests. name is no scalar resource."""
    obj = podgroup(1)
    obj["spec"]["minResources"] = {
        "cpu": "2",
        "pods": "1",
        "nvidia.com/gpu": "4",
        "count/pods": "1",
        "requests.cpu": "2",
        "requests.nvidia.com/gpu": "4",
    }
    pg = podgroup_from_object(obj, "f")
    assert pg.min_resources == {"cpu": 2000, "pods": 1, "nvidia.com/gpu": 4}
