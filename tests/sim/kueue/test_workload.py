"""Several PodSets, leader/worker groups, node affinity, admitted Workloads' usage,
topologies whose lowest level is not the hostname: cases translated from Kueue's
``TestFindTopologyAssignments`` (pkg/cache/scheduler/tas_cache_test.go) into our objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from labeler.base.errors import InputError
from labeler.sim.common.cluster import snapshot_from_objects
from labeler.sim.kueue.admit import WorkloadResult, place_workload
from labeler.sim.kueue.tree import Tree, build_tree_for_levels
from labeler.sim.kueue.usage import admitted_usage, assignment_domains, sharing_usage, tas_flavor
from labeler.sim.kueue.workload import Workload, workloads_from_object
from tests.builders import node, pod
from tests.sim.kueue.objects import as_list, podset

HOST = "kubernetes.io/hostname"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"


def tree(levels: Sequence[str], items: Sequence[Mapping[str, Any]]) -> Tree:
    snap = snapshot_from_objects(as_list(items), "test")
    return build_tree_for_levels(levels, snap.nodes, topology_name="default")


def workload(*podsets: dict[str, Any], name: str = "wl") -> Workload:
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"podSets": list(podsets)},
    }
    return workloads_from_object(obj, "test")[0]


def placed(result: WorkloadResult) -> dict[str, Any]:
    """PodSet name → {leaf value: count} or the message."""
    out: dict[str, Any] = {}
    for r in result.podsets:
        if r.outcome.fits:
            out[r.podset.name] = {a.values[-1]: a.count for a in r.outcome.assignment}
        else:
            out[r.podset.name] = r.outcome.message
    return out


def res(cpu: str, gpu: str | None = None, mem: str | None = None) -> dict[str, str]:
    out = {"cpu": cpu, "pods": "10"}
    if gpu is not None:
        out["example.com/gpu"] = gpu
    if mem is not None:
        out["memory"] = mem
    return out


def test_group_on_block_only_topology_sums_capacity_per_leaf() -> None:
    # "find topology assignment for two podsets with the same group"
    nodes = [
        node("b1").hostname().labels({BLOCK: "b1"}).allocatable(res("2", "2", "2Gi")).obj(),
        node("b2").hostname().labels({BLOCK: "b2"}).allocatable(res("5", "4")).obj(),
        node("b3").hostname().labels({BLOCK: "b3"}).allocatable(res("2", "2")).obj(),
    ]
    wl = workload(
        podset("leader", 1, {"cpu": "1"}, required=BLOCK, group="g"),
        podset("workers", 4, {"cpu": "1", "example.com/gpu": "1"}, required=BLOCK, group="g"),
    )
    result = place_workload(tree([BLOCK], nodes), wl)
    assert placed(result) == {"leader": {"b2": 1}, "workers": {"b2": 4}}
    assert result.fits


def test_group_no_fit_message_counts_workers_without_the_leader() -> None:
    # "find topology assignment for two podsets with the same group - no fit"
    nodes = [
        node("b1").hostname().labels({BLOCK: "b1"}).allocatable(res("1", "0")).obj(),
        node("b2").hostname().labels({BLOCK: "b2"}).allocatable(res("4", "4")).obj(),
    ]
    wl = workload(
        podset("leader", 1, {"cpu": "1"}, required=BLOCK, group="g"),
        podset("workers", 4, {"cpu": "1", "example.com/gpu": "1"}, required=BLOCK, group="g"),
    )
    msg = (
        'topology "default" allows to fit only 4 out of 4 pod(s). Total nodes: 2; '
        'excluded: resource "example.com/gpu": 1'
    )
    assert placed(place_workload(tree([BLOCK], nodes), wl)) == {"leader": msg, "workers": msg}


def test_leader_goes_where_workers_lose_least() -> None:
    # "find topology assignment for grouped podsets preserves worker capacity when placing leader"
    nodes = [
        node("h1").hostname().labels({RACK: "r1"}).allocatable(res("2")).obj(),
        node("h2").hostname().labels({RACK: "r1"}).allocatable(res("4")).obj(),
        node("h3").hostname().labels({RACK: "r1"}).allocatable(res("3")).obj(),
    ]
    wl = workload(
        podset("leader", 1, {"cpu": "1"}, required=RACK, group="g"),
        podset("workers", 4, {"cpu": "2"}, required=RACK, group="g"),
    )
    got = placed(place_workload(tree([RACK, HOST], nodes), wl))
    assert got == {"leader": {"h3": 1}, "workers": {"h1": 1, "h2": 2, "h3": 1}}


def test_leader_with_sliced_workers() -> None:
    # "... sliced grouped podsets preserves worker capacity when placing leader"
    nodes = [
        node("h1").hostname().labels({RACK: "r1"}).allocatable(res("2")).obj(),
        node("h2").hostname().labels({RACK: "r1"}).allocatable(res("4")).obj(),
        node("h3").hostname().labels({RACK: "r1"}).allocatable(res("3")).obj(),
    ]
    wl = workload(
        podset("leader", 1, {"cpu": "1"}, required=RACK, group="g"),
        podset(
            "workers", 8, {"cpu": "1"}, required=RACK, group="g", slice_level=HOST, slice_size=2
        ),
    )
    got = placed(place_workload(tree([RACK, HOST], nodes), wl))
    assert got == {"leader": {"h3": 1}, "workers": {"h1": 2, "h2": 4, "h3": 2}}


def test_preferred_group_on_hostname_only_topology() -> None:
    # "find topology assignment for preferred grouped podsets preserves capacity across domains"
    nodes = [
        node("h1").hostname().allocatable(res("8")).obj(),
        node("h2").hostname().allocatable(res("3")).obj(),
    ]
    wl = workload(
        podset("leader", 1, {"cpu": "1"}, preferred=HOST, group="g"),
        podset("workers", 5, {"cpu": "2"}, preferred=HOST, group="g"),
    )
    got = placed(place_workload(tree([HOST], nodes), wl))
    assert got == {"leader": {"h2": 1}, "workers": {"h1": 4, "h2": 1}}


def test_unconstrained_group_spreads_leader_and_worker() -> None:
    # "... unconstrained grouped podsets spreads leader and worker across domains"
    nodes = [
        node("h1").hostname().allocatable({"cpu": "1", "pods": "10"}).obj(),
        node("h2").hostname().allocatable({"example.com/gpu": "1", "pods": "10"}).obj(),
    ]
    wl = workload(
        podset("leader", 1, {"cpu": "1"}, unconstrained=True, group="g"),
        podset("workers", 1, {"example.com/gpu": "1"}, unconstrained=True, group="g"),
    )
    # a group name only counts beside required/preferred: two separate PodSets here
    got = placed(place_workload(tree([HOST], nodes), wl))
    assert got == {"leader": {"h1": 1}, "workers": {"h2": 1}}


def test_later_podset_sees_earlier_usage_and_the_selector_exclusion() -> None:
    # "... two podsets with the same group - optimizes domain ..." second half: ps1 then ps2
    nodes = [
        node("x1").hostname().allocatable(res("4", mem="4Gi")).obj(),
        node("x2").hostname().allocatable(res("4", mem="4Gi")).obj(),
    ]
    wl = workload(
        podset("ps1", 1, {"cpu": "1", "memory": "1"}),
        podset("ps2", 1, {"cpu": "1", "memory": "1"}, spec={"nodeSelector": {"never": "match"}}),
    )
    result = place_workload(tree([HOST], nodes), wl)
    assert placed(result) == {
        "ps1": {"x1": 1},
        "ps2": 'topology "default" doesn\'t allow to fit any of 1 pod(s). '
        "Total nodes: 2; excluded: nodeSelector: 2",
    }
    assert not result.fits
    assert result.message.startswith('topology "default" doesn\'t allow')


def test_sequential_podsets_share_capacity() -> None:
    nodes = [
        node(f"h{i}").hostname().labels({RACK: "r1"}).allocatable(res("4")).obj() for i in (1, 2)
    ]
    wl = workload(
        podset("a", 4, {"cpu": "1"}, required=RACK),
        podset("b", 4, {"cpu": "1"}, required=RACK),
        podset("c", 1, {"cpu": "1"}, required=RACK),
    )
    result = place_workload(tree([RACK, HOST], nodes), wl)
    got = placed(result)
    assert got["a"] == {"h1": 4} and got["b"] == {"h2": 4}
    assert got["c"] == (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). '
        'Total nodes: 2; excluded: resource "cpu": 2'
    )
    c = result.podsets[2]
    # the Workload's own earlier PodSets take the rack even on an empty cluster
    assert c.narrowest_now is None and c.narrowest_empty is None
    assert c.reached and result.podsets[1].narrowest_now == 1


def _affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
    }


def test_required_node_affinity_filters_and_is_counted() -> None:
    nodes = [
        node("h1").hostname().labels({"pool": "a"}).allocatable(res("1")).obj(),
        node("h2").hostname().labels({"pool": "b"}).allocatable(res("1")).obj(),
        node("h3").hostname().labels({"pool": "c", "big": "1"}).allocatable(res("8")).obj(),
    ]
    expr = [{"key": "pool", "operator": "In", "values": ["a", "b"]}]
    wl = workload(podset("main", 2, {"cpu": "1"}, spec=_affinity(expr)))
    assert placed(place_workload(tree([HOST], nodes), wl)) == {"main": {"h1": 1, "h2": 1}}
    wl = workload(podset("main", 3, {"cpu": "1"}, required=HOST, spec=_affinity(expr)))
    assert placed(place_workload(tree([HOST], nodes), wl)) == {
        "main": 'topology "default" allows to fit only 1 out of 3 pod(s). '
        "Total nodes: 3; excluded: affinity: 1"
    }
    # terms are ORed: the second term admits h3
    wl = workload(
        podset(
            "main",
            3,
            {"cpu": "1"},
            required=HOST,
            spec=_affinity(expr, [{"key": "big", "operator": "Exists"}]),
        )
    )
    assert placed(place_workload(tree([HOST], nodes), wl)) == {"main": {"h3": 3}}


def test_selectors_and_affinity_do_not_apply_when_leaves_are_not_nodes() -> None:
    # kueue: node filters run only when the lowest level is the hostname
    nodes = [node("h1").hostname().labels({BLOCK: "b1", "pool": "x"}).allocatable(res("2")).obj()]
    expr = [{"key": "pool", "operator": "In", "values": ["y"]}]
    wl = workload(podset("main", 2, {"cpu": "1"}, required=BLOCK, spec=_affinity(expr)))
    assert placed(place_workload(tree([BLOCK], nodes), wl)) == {"main": {"b1": 2}}


def test_not_ready_and_cordoned_nodes_are_no_capacity() -> None:
    nodes = [
        node("h1").hostname().labels({BLOCK: "b1"}).allocatable(res("2")).ready(False).obj(),
        node("h2").hostname().labels({BLOCK: "b1"}).allocatable(res("2")).unschedulable(True).obj(),
        node("h3").hostname().labels({BLOCK: "b1"}).allocatable(res("2")).obj(),
    ]
    t = tree([BLOCK], nodes)
    wl = workload(podset("main", 3, {"cpu": "1"}, required=BLOCK))
    assert placed(place_workload(t, wl)) == {
        "main": 'topology "default" allows to fit only 2 out of 3 pod(s)'
    }
    assert {o.node: o.reason for o in t.outside} == {
        "h1": "not Ready",
        "h2": "cordoned (spec.unschedulable)",
    }


def admitted(
    name: str, podsets: list[dict[str, Any]], assignments: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"podSets": podsets},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": assignments}},
    }


def admitted_main(name: str, pods: int, flavor: str, assignment: dict[str, Any]) -> dict[str, Any]:
    """An admitted Workload of one PodSet "main" (1 CPU a pod) on ``flavor``."""
    return admitted(
        name,
        [podset("main", pods, {"cpu": "1"})],
        [{"name": "main", "flavors": {"cpu": flavor}, "topologyAssignment": assignment}],
    )


def test_flavors_whose_topology_ends_at_the_hostname_share_their_usage() -> None:
    def topology(name: str, *levels: str) -> dict[str, Any]:
        spec = {"levels": [{"nodeLabel": lv} for lv in levels]}
        return {"kind": "Topology", "metadata": {"name": name}, "spec": spec}

    def rf(name: str, topo: str) -> dict[str, Any]:
        return {
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"topologyName": topo},
        }

    objects = [
        topology("hosts", RACK, HOST),
        topology("racks", RACK),
        rf("a", "hosts"),
        rf("b", "hosts"),
        rf("r", "racks"),
        {"kind": "ResourceFlavor", "metadata": {"name": "plain"}, "spec": {}},
    ]
    # Kueue sums per node what every hostname-level TAS flavor holds (overlapping flavors)
    assert sharing_usage(objects, tas_flavor(objects, "a", "test")) == {"a", "b"}
    # a topology that ends above the hostname keeps its own flavor's usage
    assert sharing_usage(objects, tas_flavor(objects, "r", "test")) == {"r"}


def test_admitted_workloads_hold_capacity_v1beta1_and_v1beta2() -> None:
    nodes = [
        node(f"h{i}").hostname().labels({RACK: "r1"}).allocatable(res("4")).obj() for i in (1, 2)
    ]
    domains = {"levels": [HOST], "domains": [{"values": ["h1"], "count": 3}]}
    old = admitted_main("old", 3, "tas", domains)
    slices = {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"prefix": "h", "roots": ["1", "2"]}}],
                "podCounts": {"universal": 1},
            }
        ],
    }
    new = admitted_main("new", 2, "tas", slices)
    elsewhere = {"levels": [HOST], "domains": [{"values": ["h2"], "count": 4}]}
    other = admitted_main("other-flavor", 4, "other", elsewhere)
    held = admitted_usage([old, new, other], flavors={"tas"})
    assert held.workloads == 2
    assert held.by_leaf["h1"] == {"cpu": 4000, "pods": 4}
    assert held.by_leaf["h2"] == {"cpu": 1000, "pods": 1}
    wl = workload(podset("main", 3, {"cpu": "1"}, required=RACK))
    result = place_workload(tree([RACK, HOST], nodes), wl, held.by_leaf)
    assert placed(result) == {"main": {"h2": 3}}
    wl = workload(podset("main", 4, {"cpu": "1"}, required=RACK))
    result = place_workload(tree([RACK, HOST], nodes), wl, held.by_leaf)
    assert placed(result) == {
        "main": 'topology "default" allows to fit only 3 out of 4 pod(s). '
        'Total nodes: 2; excluded: resource "cpu": 1'
    }
    assert result.podsets[0].narrowest_empty == 1  # one node holds 4 once drained


def test_finished_and_unadmitted_workloads_hold_nothing() -> None:
    ta = {"levels": [HOST], "domains": [{"values": ["h1"], "count": 1}]}
    done = admitted(
        "done", [podset("main", 1, {"cpu": "1"})], [{"name": "main", "topologyAssignment": ta}]
    )
    done["status"]["conditions"] = [{"type": "Finished", "status": "True"}]
    pending = {"kind": "Workload", "metadata": {"name": "p"}, "spec": {}, "status": {}}
    assert admitted_usage([done, pending]).workloads == 0


def test_compressed_assignment_with_suffix_and_individual_counts() -> None:
    ta = {
        "levels": [BLOCK, HOST],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"universal": "b1"},
                    {"individual": {"prefix": "gpu-", "suffix": ".x", "roots": ["a", "b"]}},
                ],
                "podCounts": {"individual": [2, 5]},
            }
        ],
    }
    assert assignment_domains(ta, "t") == [(("b1", "gpu-a.x"), 2), (("b1", "gpu-b.x"), 5)]
    with pytest.raises(InputError, match="not in Kueue's format"):
        assignment_domains({"slices": [{"domainCount": 1, "valuesPerLevel": [{}]}]}, "t")


def test_flavor_and_topology_from_kueue_objects() -> None:
    objs = [
        {
            "kind": "Topology",
            "metadata": {"name": "topo"},
            "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": HOST}]},
        },
        {
            "kind": "ResourceFlavor",
            "metadata": {"name": "gpu"},
            "spec": {
                "topologyName": "topo",
                "nodeLabels": {"pool": "gpu"},
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ],
            },
        },
        {"kind": "ResourceFlavor", "metadata": {"name": "plain"}, "spec": {}},
    ]
    f = tas_flavor(objs, None, "snap")
    assert (f.name, f.topology, f.levels, dict(f.node_labels)) == (
        "gpu",
        "topo",
        (BLOCK, HOST),
        {"pool": "gpu"},
    )
    assert f.tolerations[0].operator == "Exists"
    with pytest.raises(InputError, match="no TAS ResourceFlavor 'plain'"):
        tas_flavor(objs, "plain", "snap")
    with pytest.raises(InputError, match="Topology 'gone'"):
        tas_flavor([{**objs[1], "spec": {"topologyName": "gone"}}], None, "snap")


def _template(annotations: Mapping[str, str], cpu: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"annotations": dict(annotations)},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }


def test_job_jobset_and_lws_become_podsets_as_kueue_builds_them() -> None:
    job = {
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "parallelism": 4,
            "completions": 3,
            "template": _template({"kueue.x-k8s.io/podset-preferred-topology": RACK}),
        },
    }
    (wl,) = workloads_from_object(job, "f")
    (ps,) = wl.podsets
    assert (ps.name, ps.count, ps.request.mode, ps.request.level) == ("main", 3, "preferred", RACK)
    jobset = {
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {
            "replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": _template({})}}},
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "parallelism": 4,
                            "template": _template(
                                {
                                    "kueue.x-k8s.io/podset-required-topology": BLOCK,
                                    "kueue.x-k8s.io/podset-slice-required-topology": RACK,
                                    "kueue.x-k8s.io/podset-slice-size": "4",
                                }
                            ),
                        }
                    },
                },
            ]
        },
    }
    (wl,) = workloads_from_object(jobset, "f")
    assert [(p.name, p.count, p.request.mode) for p in wl.podsets] == [
        ("driver", 1, "unconstrained"),
        ("workers", 8, "required"),
    ]
    assert wl.podsets[1].request.slices == ((RACK, 4),)
    grouped = {
        "kueue.x-k8s.io/podset-required-topology": RACK,
        "kueue.x-k8s.io/podset-group-name": "g",
    }
    lws = {
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "l"},
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {
                "size": 4,
                "leaderTemplate": _template(grouped),
                "workerTemplate": _template(grouped, cpu="2"),
            },
        },
    }
    wls = workloads_from_object(lws, "f")
    assert len(wls) == 2
    assert [(p.name, p.count, p.request.group) for p in wls[0].podsets] == [
        ("leader", 1, "g"),
        ("worker", 3, "g"),
    ]
    with pytest.raises(InputError, match="kind 'Deployment'"):
        workloads_from_object({"kind": "Deployment"}, "f")


def test_tas_pods_are_left_to_their_workloads() -> None:
    p = pod("p").on("h1").requests({"cpu": "1"}).obj()
    p["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": RACK}
    items = [
        node("h1").hostname().labels({RACK: "r1"}).allocatable(res("4")).obj(),
        p,
        pod("q").on("h1").requests({"cpu": "1"}).obj(),
    ]
    snap = snapshot_from_objects(as_list(items), "t", tas_pods_via_workloads=True)
    assert snap.nodes[0].used["cpu"] == 1000
    snap = snapshot_from_objects(as_list(items), "t")
    assert snap.nodes[0].used["cpu"] == 2000


@pytest.mark.parametrize(("count", "words"), [(-1, "-1 is below 0"), ("4", "'4' is not a whole")])
def test_a_podset_count_that_is_not_a_whole_number_names_its_podset(
    count: object, words: str
) -> None:
    bad = {**podset("workers", 1, {"cpu": "1"}), "count": count}
    with pytest.raises(InputError, match=rf"podSets\[0\]\.count: {words}"):
        workload(bad)
