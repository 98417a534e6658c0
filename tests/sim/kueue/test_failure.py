"""What Kueue does to an admitted Workload when its nodes fail, with Kueue's situations.

The "workload with unhealthyNode …; second pass …" cases of Kueue's ``TestSchedule``
(``pkg/scheduler/scheduler_tas_test.go``) and the node-replacement cases of
``TestFindTopologyAssignments`` (``pkg/cache/scheduler/tas_cache_test.go``), re-stated:
six CPU nodes x1…x6 in two blocks (x0, named by the assignments, is gone), the flavor
``tas-default`` on ``tas-node=true`` nodes and the Topology ``tas-three-level``; the
Workload's own pods count on their nodes, as in Kueue's cache. Then the node controller's
rules (``node_controller.go``): which nodes fail, when, and two failures at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from labeler.sim.common.cluster import snapshot_from_objects
from labeler.sim.kueue.admitted import what_if
from labeler.sim.kueue.failure import FailureAnswer, Fate
from labeler.sim.kueue.gates import FAIL_FAST, ON_NODE_TAINTS, ON_POD_TERMINATION, Gates, Timing
from tests.builders import node
from tests.sim.kueue.objects import as_list, podset

HOST = "kubernetes.io/hostname"
BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
NO_FAIL_FAST = Gates({FAIL_FAST: False})
NODES = [  # (block, rack, host, cpu, memory, pods)
    ("b1", "r1", "x1", "1", "1Gi", "10"),
    ("b1", "r2", "x2", "1", "1Gi", "10"),
    ("b1", "r2", "x3", "1", "1Gi", "10"),
    ("b1", "r2", "x4", "1", "1Gi", "10"),
    ("b2", "r1", "x5", "1", "1Gi", "10"),
    ("b2", "r2", "x6", "2", "4Gi", "40"),
]


def cluster_nodes(**changes: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for block, rack, host, cpu, mem, pods in NODES:
        obj = (
            node(host)
            .hostname()
            .labels({"tas-node": "true", BLOCK: block, RACK: rack})
            .allocatable({"cpu": cpu, "memory": mem, "pods": pods})
            .obj()
        )
        for key, value in changes.get(host, {}).items():
            if key == "ready":
                obj["status"]["conditions"][0]["status"] = "True" if value else "False"
            else:
                obj["spec"][key] = value
        out.append(obj)
    return out


def kueue_objects(levels: Sequence[str] = (BLOCK, RACK, HOST)) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "tas-three-level"},
            "spec": {"levels": [{"nodeLabel": k} for k in levels]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "tas-default"},
            "spec": {"nodeLabels": {"tas-node": "true"}, "topologyName": "tas-three-level"},
        },
    ]


def admitted(
    podsets: Sequence[dict[str, Any]],
    assignments: Mapping[str, Mapping[str, int]],
    *,
    unhealthy: Sequence[str] = (),
    name: str = "foo",
    owners: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    psas = [
        {
            "name": ps["name"],
            "count": ps["count"],
            "flavors": {"cpu": "tas-default"},
            "topologyAssignment": {
                "levels": [HOST],
                "domains": [
                    {"values": [h], "count": n} for h, n in assignments[ps["name"]].items()
                ],
            },
        }
        for ps in podsets
    ]
    status: dict[str, Any] = {"admission": {"clusterQueue": "tas-main", "podSetAssignments": psas}}
    if unhealthy:
        status["unhealthyNodes"] = [{"name": n} for n in unhealthy]
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owners:
        meta["ownerReferences"] = list(owners)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": {"queueName": "tas-main", "podSets": list(podsets)},
        "status": status,
    }


def answer(
    wl: dict[str, Any],
    *,
    nodes: list[dict[str, Any]] | None = None,
    failed: Sequence[str] = (),
    gates: Gates | None = None,
    timing: Timing = Timing.TOGETHER,
    extra: Sequence[dict[str, Any]] = (),
) -> FailureAnswer:
    items = [*(nodes if nodes is not None else cluster_nodes()), *kueue_objects(), wl, *extra]
    snap = snapshot_from_objects(as_list(items), "test")
    return what_if(snap, wl, failed, gates or Gates(), timing=timing)


def assigned(a: FailureAnswer, podset: str = "one") -> dict[str, int]:
    return {values[-1]: n for values, n in a.assignments[podset]}


ONE_CPU = {"cpu": "1"}


def test_baseline_the_lost_pod_moves_to_a_free_node() -> None:
    wl = admitted([podset("one", 1, ONE_CPU, preferred=HOST)], {"one": {"x0": 1}}, unhealthy=["x0"])
    a = answer(wl)
    assert (a.outcome, assigned(a)) == (Fate.REPLACED, {"x1": 1}) and a.fits


def test_preferred_the_replacement_joins_the_pod_left_on_its_node() -> None:
    wl = admitted(
        [podset("one", 2, {"cpu": "500m"}, preferred=RACK)],
        {"one": {"x0": 1, "x1": 1}},
        unhealthy=["x0"],
    )
    assert assigned(answer(wl)) == {"x1": 2}


def test_preferred_no_fit_waits_without_fail_fast_and_evicts_with_it() -> None:
    wl = admitted(
        [podset("one", 1, {"cpu": "3"}, preferred=RACK)], {"one": {"x0": 1}}, unhealthy=["x0"]
    )
    waiting = answer(wl, gates=NO_FAIL_FAST)
    assert waiting.outcome == Fate.WAITING and not waiting.fits
    assert waiting.message == (
        "couldn't assign flavors to pod set one: topology \"tas-three-level\" doesn't allow to "
        'fit any of 1 pod(s). Total nodes: 6; excluded: resource "cpu": 6'
    )
    assert assigned(waiting) == {"x0": 1}  # the assignment as it was
    evicted = answer(wl)
    assert evicted.outcome == Fate.EVICTED
    assert evicted.message == (
        "Workload was evicted as there was no replacement for unhealthy node(s): x0"
    )


def test_every_request_of_the_pod_spec_counts_memory_too() -> None:
    wl = admitted(
        [podset("one", 1, {"cpu": "1", "memory": "2Gi"}, preferred=RACK)],
        {"one": {"x0": 1}},
        unhealthy=["x0"],
    )
    assert assigned(answer(wl, gates=NO_FAIL_FAST)) == {"x6": 1}


def test_required_rack_stays_in_the_rack_of_the_pods_left() -> None:
    wl = admitted(
        [podset("one", 2, ONE_CPU, required=RACK)], {"one": {"x0": 1, "x2": 1}}, unhealthy=["x0"]
    )
    a = answer(wl)
    assert assigned(a) == {"x2": 1, "x3": 1}
    assert a.steps[0].domain == ("b1", "r2")


def test_required_rack_with_nothing_left_searches_everywhere() -> None:
    wl = admitted([podset("one", 1, ONE_CPU, required=RACK)], {"one": {"x0": 1}}, unhealthy=["x0"])
    a = answer(wl)
    assert assigned(a) == {"x1": 1} and a.steps[0].domain is None


def test_required_rack_no_room_names_the_nodes_outside_the_rack() -> None:
    wl = admitted(
        [podset("one", 2, ONE_CPU, required=RACK)], {"one": {"x0": 1, "x1": 1}}, unhealthy=["x0"]
    )
    a = answer(wl, gates=NO_FAIL_FAST)
    assert a.message.endswith(
        'doesn\'t allow to fit any of 1 pod(s). Total nodes: 6; excluded: resource "cpu": 1, '
        "topologyDomain: 5"
    )


def test_only_the_podset_on_the_failed_node_moves() -> None:
    podsets = [podset("one", 1, ONE_CPU, preferred=HOST), podset("two", 1, ONE_CPU, preferred=HOST)]
    wl = admitted(podsets, {"one": {"x0": 1}, "two": {"x1": 1}}, unhealthy=["x0"])
    a = answer(wl)
    assert (assigned(a, "one"), assigned(a, "two")) == ({"x2": 1}, {"x1": 1})
    assert [s.podset for s in a.steps] == ["one"]


@pytest.mark.parametrize(
    ("count", "cpu", "ps", "before", "failed", "after"),
    [
        # baseline: one incomplete rack slice of 2, repaired in the rack
        (2, "1", dict(preferred=BLOCK), {"x2": 1, "x3": 1}, "x2", {"x3": 1, "x4": 1}),
        # the failed node held half of a rack slice of 8
        (8, "250m", dict(preferred=BLOCK, size=8), {"x2": 4, "x3": 4}, "x2", {"x3": 4, "x4": 4}),
        # whole slices lost: anywhere in the required block
        (12, "250m", dict(required=BLOCK, size=4), {"x2": 4, "x3": 4, "x4": 4}, "x3",
         {"x1": 4, "x2": 4, "x4": 4}),
        # a whole slice and part of another lost
        (8, "200m", dict(required=BLOCK), {"x1": 3, "x2": 5}, "x1", {"x2": 5, "x3": 3}),
    ],
)  # fmt: skip
def test_slices_after_a_failure(
    count: int,
    cpu: str,
    ps: dict[str, Any],
    before: dict[str, int],
    failed: str,
    after: dict[str, int],
) -> None:
    size = ps.pop("size", 2)
    one = podset("one", count, {"cpu": cpu}, slice_size=size, slice_level=RACK, **ps)
    wl = admitted([one], {"one": before}, unhealthy=[failed])
    assert assigned(answer(wl)) == after


def test_a_podset_entirely_on_the_failed_node_goes_where_its_host_slices_fit() -> None:
    one = podset("one", 4, {"cpu": "250m"}, required=RACK, slice_size=2, slice_level=HOST)
    assert assigned(answer(admitted([one], {"one": {"x1": 4}}, unhealthy=["x1"]))) == {"x5": 4}


def test_the_slice_domain_is_the_one_the_lost_pods_complete() -> None:
    one = podset("one", 8, {"cpu": "500m"}, preferred=BLOCK, slice_size=4, slice_level=BLOCK)
    before = {"x1": 2, "x3": 2, "x5": 2, "x7": 2}
    a = answer(admitted([one], {"one": before}, unhealthy=["x7"]))
    assert assigned(a) == {"x1": 2, "x3": 2, "x5": 2, "x6": 2}


def test_no_room_for_an_incomplete_slice_evicts() -> None:
    one = podset("one", 2, ONE_CPU, preferred=BLOCK, slice_size=2, slice_level=RACK)
    a = answer(admitted([one], {"one": {"x0": 1, "x1": 1}}, unhealthy=["x0"]))
    assert a.outcome == Fate.EVICTED and assigned(a) == {"x0": 1, "x1": 1}


def test_a_recorded_node_that_is_still_ready_is_taken_as_it_is() -> None:
    # x1 is Ready but recorded; the Workload's own pod fills it, so x2 takes the pod
    one = podset("one", 1, ONE_CPU, required=HOST)
    assert assigned(answer(admitted([one], {"one": {"x1": 1}}, unhealthy=["x1"]))) == {"x2": 1}


# --- SkipReassignmentForPodOwnedWorkloads (tas_cache_test.go) -------------------------------

POD = {"apiVersion": "v1", "kind": "Pod", "name": "owner-0", "uid": "uid-0"}
JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "owner-0", "uid": "uid-0"}


@pytest.mark.parametrize(
    ("owners", "annotations", "gates", "outcome"),
    [
        ([POD], {}, Gates(), Fate.KEPT),
        ([JOB], {}, Gates(), Fate.REPLACED),
        ([POD, {**POD, "name": "owner-1", "uid": "uid-1"}], {}, Gates(), Fate.REPLACED),
        ([POD], {"kueue.x-k8s.io/is-group-workload": "true"}, Gates(), Fate.REPLACED),
        ([POD], {}, Gates({"SkipReassignmentForPodOwnedWorkloads": False}), Fate.REPLACED),
    ],
)
def test_a_workload_owned_by_one_pod_keeps_its_assignment(
    owners: list[dict[str, str]], annotations: dict[str, str], gates: Gates, outcome: Fate
) -> None:
    wl = admitted(
        [podset("one", 1, ONE_CPU, required=HOST)],
        {"one": {"x1": 1}},
        unhealthy=["x1"],
        owners=owners,
    )
    wl["metadata"]["annotations"] = annotations
    nodes = cluster_nodes(x1={"ready": False})
    a = answer(wl, nodes=nodes, gates=gates)
    assert a.outcome == outcome
    assert assigned(a) == ({"x1": 1} if outcome == Fate.KEPT else {"x2": 1})


# --- the node controller: which nodes fail, when, and two at once -------------------------


def two_pods() -> dict[str, Any]:
    return admitted([podset("one", 2, ONE_CPU, preferred=BLOCK)], {"one": {"x2": 1, "x3": 1}})


def test_nothing_failed_nothing_to_do() -> None:
    a = answer(two_pods(), failed=["x5"])
    assert a.outcome == Fate.UNAFFECTED and a.fits and [f.podsets for f in a.failures] == [()]


def test_two_nodes_failing_together_evict_in_kueues_words() -> None:
    a = answer(two_pods(), failed=["x2", "x3"])
    assert a.outcome == Fate.EVICTED and a.message == (
        "Workload eviction triggered due to multiple TAS assigned node failures, including: x2, x3"
    )
    b = answer(two_pods(), failed=["x2", "x3"], timing=Timing.ONE_BY_ONE)
    assert b.outcome == Fate.REPLACED and assigned(b) == {"x1": 1, "x4": 1}


def test_a_failure_in_the_snapshot_counts_without_the_flag() -> None:
    a = answer(two_pods(), nodes=cluster_nodes(x2={"ready": False}))
    assert [(f.node, f.cause, f.wait) for f in a.failures] == [("x2", "NotReady", "")]
    # preferred block: the tighter block b1, its first rack with room
    assert a.outcome == Fate.REPLACED and assigned(a) == {"x1": 1, "x3": 1}


def test_a_notready_node_with_running_pods_fails_when_they_end() -> None:
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "foo-0",
            "namespace": "default",
            "annotations": {"kueue.x-k8s.io/workload": "foo"},
        },
        "spec": {"nodeName": "x2", "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }
    a = answer(two_pods(), nodes=cluster_nodes(x2={"ready": False}), extra=[running])
    assert a.failures[0].wait == "once this Workload's 1 running pod(s) there end"
    off = answer(
        two_pods(),
        nodes=cluster_nodes(x2={"ready": False}),
        extra=[running],
        gates=Gates({ON_POD_TERMINATION: False}),
    )
    assert off.failures[0].wait == "30 s after it went NotReady"


def test_an_untolerated_taint_and_a_cordon_fail_a_node() -> None:
    taint = [{"key": "gpu", "value": "bad", "effect": "NoExecute"}]
    a = answer(two_pods(), nodes=cluster_nodes(x2={"taints": taint}, x3={"unschedulable": True}))
    assert [f.cause for f in a.failures] == [
        "tainted: taint gpu=bad:NoExecute not tolerated by PodSet one",
        "cordoned: taint node.kubernetes.io/unschedulable:NoSchedule not tolerated by PodSet one",
    ]
    assert a.outcome == Fate.EVICTED  # two at once
    quiet = answer(
        two_pods(), nodes=cluster_nodes(x2={"taints": taint}), gates=Gates({ON_NODE_TAINTS: False})
    )
    assert quiet.outcome == Fate.UNAFFECTED


def test_replacement_gate_off_keeps_the_assignment() -> None:
    gates = Gates(
        {
            "TASFailedNodeReplacement": False,
            FAIL_FAST: False,
            ON_POD_TERMINATION: False,
        }
    )
    a = answer(two_pods(), failed=["x2"], gates=gates)
    assert a.outcome == Fate.KEPT and "TASFailedNodeReplacement is off" in a.message
    assert [f.node for f in a.ignored] == ["x2"]


def test_a_second_failure_while_the_first_waits_evicts() -> None:
    one = podset("one", 2, {"cpu": "3"}, preferred=RACK)
    wl = admitted([one], {"one": {"x0": 1, "x1": 1}}, unhealthy=["x0"])
    a = answer(wl, failed=["x1"], gates=NO_FAIL_FAST, timing=Timing.ONE_BY_ONE)
    assert a.outcome == Fate.EVICTED and a.message.endswith("including: x0, x1")


def test_stale_assignment_after_another_node_went_away() -> None:
    # x0 is recorded; x2 is NotReady with a pod still running (not recorded yet): the
    # replacement for x0 finds x2 gone from the topology and gives up
    wl = admitted(
        [podset("one", 2, ONE_CPU, preferred=BLOCK)], {"one": {"x0": 1, "x2": 1}}, unhealthy=["x0"]
    )
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "annotations": {"kueue.x-k8s.io/workload": "foo"},
        },
        "spec": {"nodeName": "x2", "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }
    a = answer(wl, nodes=cluster_nodes(x2={"ready": False}), extra=[running], gates=NO_FAIL_FAST)
    assert a.steps[0].message == (
        "Cannot replace the node, because the existing topologyAssignment is invalid, as it "
        "contains the stale domain x2"
    )
