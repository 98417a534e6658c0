"""kube-scheduler's plugins one by one: NodeResourcesFit's placement score table (the table
of pkg/scheduler/framework/plugins/noderesources/placement_bin_packing_test.go, ported: that
alpha plugin's MostAllocated scoring is what NodeResourcesFit's ScorePlacement does now),
PodGroupPodsCount's normalisation, the filters' messages, reading PodGroups, and the
PodGroup spec that the flag form prints, checked against the Kubernetes 1.37 schema."""

from __future__ import annotations

import pytest

from labeler.base.errors import InputError
from labeler.core.capacity import Node
from labeler.core.node import Taint
from labeler.core.profiles import oci_rdma
from labeler.sim.common.shape import PodShape
from labeler.sim.kubesched.filters import feasible
from labeler.sim.kubesched.objects import group_from_object, pod_from_object
from labeler.sim.kubesched.score import (
    balanced_allocation,
    fit_placement_score,
    node_score,
    pods_count_scores,
)
from labeler.sim.kueue.advice import advise, make_job
from labeler.sim.kueue.assign import Mode
from labeler.sim.kueue.report import advice_text
from tests.builders import pod
from tests.sim.kubesched.podgroups import composite, gang, member, nodes_of, rack_node, run
from tests.sim.kueue.objects import gpu_nodes, tree_of


def _node(name: str, cpu: int, mem: int, gpu: int = 0) -> Node:
    alloc = {"cpu": cpu, "memory": mem, "pods": 110}
    if gpu:
        alloc["nvidia.com/gpu"] = gpu
    return Node(name, allocatable=alloc)


def _pod(cpu: str, mem: str, gpu: str | None = None):
    obj = member("x", "pg", cpu="1")
    reqs = {"cpu": cpu, "memory": mem}
    if gpu is not None:
        reqs["nvidia.com/gpu"] = gpu
    obj["spec"]["containers"][0]["resources"]["requests"] = reqs
    got = pod_from_object(obj, "test")
    assert got is not None
    return got


@pytest.mark.parametrize(
    ("weights", "same_node", "existing", "gpu", "expected"),
    [
        # CPU 3000m/10000m = 30, memory 2000/10000 = 20 → (30+20)/2
        ({"cpu": 1, "memory": 1}, False, None, False, 25),
        # weights 4:1 → (4*30+20)/5
        ({"cpu": 4, "memory": 1}, False, None, False, 28),
        # several pods on one node count the same
        ({"cpu": 4, "memory": 1}, True, None, False, 28),
        # a running pod on node1 (1000m) counts: CPU 40 → (40+20)/2
        ({"cpu": 1, "memory": 1}, False, {"cpu": 1000}, False, 30),
    ],
)
def test_fit_placement_score_table(weights, same_node, existing, gpu, expected) -> None:
    nodes = [_node("node1", 5000, 5000), _node("node2", 5000, 5000)]
    foo, bar = _pod("1000m", "0"), _pod("2000m", "2000")
    proposed = [(foo, "node1"), (bar, "node1" if same_node else "node2")]
    requested = {"node1": existing or {}}
    assert fit_placement_score(nodes, proposed, requested, weights) == expected


def test_fit_placement_score_counts_an_extended_resource_only_when_the_group_asks_for_it() -> None:
    weights = {"cpu": 1, "memory": 1, "nvidia.com/gpu": 1}
    nodes = [_node("node1", 5000, 5000, 5), _node("node2", 5000, 5000, 5)]
    asked = [(_pod("1000m", "0", "0"), "node1"), (_pod("1000m", "2000", "1"), "node2")]
    running = {"node1": {"cpu": 1000, "nvidia.com/gpu": 0}}
    assert fit_placement_score(nodes, asked, running, weights) == 20  # (30 + 20 + 10) / 3
    none = [(_pod("1000m", "0", "0"), "node1"), (_pod("1000m", "2000", "0"), "node2")]
    running = {"node1": {"cpu": 1000, "nvidia.com/gpu": 1}}
    assert fit_placement_score(nodes, none, running, weights) == 25


def test_a_node_outside_the_placement_does_not_count() -> None:
    nodes = [_node("node1", 5000, 5000), _node("node2", 5000, 5000)]
    proposed = [(_pod("1000m", "0"), "node1"), (_pod("2000m", "2000"), "node2")]
    assert fit_placement_score(nodes, proposed, {"node3": {"cpu": 5000}}) == 25


def test_pods_count_is_normalised_on_the_largest() -> None:
    assert pods_count_scores([3, 2, 1]) == [100, 66, 33]


def test_scoring_counts_a_container_without_requests_at_the_default() -> None:
    obj = member("x", "pg", cpu="1")
    obj["spec"]["containers"] = [{"name": "a"}, {"name": "b", "resources": {}}]
    got = pod_from_object(obj, "test")
    assert got is not None and got.scored == {"cpu": 200, "memory": 2 * 200 * 1024 * 1024}


GPU_TAINT = Taint("gpu", "x", "NoSchedule")


def test_filter_messages_in_the_schedulers_words() -> None:
    nodes = [
        Node("a", allocatable={"cpu": 500, "pods": 110}),
        Node("b", allocatable={"cpu": 4000, "pods": 0}),
        Node(
            "c", allocatable={"cpu": 4000, "pods": 110}, taints=(Taint("gpu", "x", "NoSchedule"),)
        ),
        Node("d", allocatable={"cpu": 4000, "pods": 110}, unschedulable=True),
        Node("e", allocatable={"cpu": 4000, "pods": 110}, ready=False),
    ]
    p = _pod("1", "0")
    free = {n.name: n.free() for n in nodes}
    ok, message = feasible(nodes, free, p)
    assert ok == [] and message == (
        "0/5 nodes are available: 1 Insufficient cpu, 1 Too many pods, "
        "1 node(s) were unschedulable, 2 node(s) had untolerated taint(s)."
    )


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"schedulingPolicy": {}}, "needs exactly one of gang (minCount) or basic"),
        ({"schedulingPolicy": {"gang": {"minCount": 0}}}, "minCount must be a positive integer"),
        (
            {
                "schedulingPolicy": {"basic": {}},
                "schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]},
            },
            "takes at most one entry",
        ),
        (
            {"schedulingPolicy": {"basic": {}}, "schedulingConstraints": {"topology": [{}]}},
            "topology[0].key is missing",
        ),
    ],
)
def test_bad_podgroups_name_the_object_and_field(spec, problem) -> None:
    obj = gang("pg1", None, 1)
    obj["spec"] = spec
    with pytest.raises(InputError) as e:
        group_from_object(obj, "f.yaml: object 1")
    assert "f.yaml: object 1 (PodGroup ns/pg1)" in str(e.value) and problem in str(e.value)


@pytest.mark.parametrize("mode", [Mode.REQUIRED, Mode.PREFERRED, Mode.UNCONSTRAINED])
def test_flag_form_prints_a_podgroup_kube_scheduler_accepts(mode: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    topology = oci_rdma().topology
    lb = topology.keys[-1]
    spec = [(("i", "nb", "lb1"), f"n{i}", 8, 0) for i in range(2)]
    tree = tree_of(topology, gpu_nodes(topology.keys, spec))
    level = None if mode == Mode.UNCONSTRAINED else "local_block"
    job = make_job(topology, 2, mode=mode, level=level)
    result = advise(topology, tree, PodShape({"nvidia.com/gpu": 1}), job)
    if mode == Mode.UNCONSTRAINED:
        assert result.podgroup is None
        return
    assert result.podgroup == {"schedulingConstraints": {"topology": [{"key": lb}]}}
    doc = gang("job", None, 2)
    doc["spec"].update(result.podgroup)
    kubernetes_validate.validate(doc, "1.37", strict=True)
    text = advice_text(topology, result, {"nvidia.com/gpu": 1})
    assert "kube-scheduler PodGroup spec (scheduling.k8s.io/v1beta1" in text
    assert ("no preferred mode" in text) == (mode == Mode.PREFERRED)


def test_test_objects_validate_against_the_1_37_schemas() -> None:
    """What the scenarios feed in is what a 1.37 API server accepts."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    from tests.sim.kubesched.podgroups import basic, composite

    for doc in (
        gang("a", "rack", 2, parent="root"),
        basic("b", None),
        composite("root", "zone", 2),
    ):
        kubernetes_validate.validate(doc, "1.37", strict=True)
    kubernetes_validate.validate(member("p", "a", cpu="1"), "1.37", strict=True)


# --- when there is no placement, and what scoring counts --------------------------------


def test_no_node_with_the_key_is_no_feasible_placement() -> None:
    cluster = [
        rack_node("n1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("n2", {"rack": "rack-2", "zone": "zone-1"}),
    ]
    advice = run(
        cluster,
        [
            gang("pg1", "block", 1),
            member("p1", "pg1", cpu="1"),
        ],
    )
    result = advice.results[0]
    # TopologyPlacement returns no placement; the framework's status says so, no more
    assert result.message == advice.message == "no feasible placements found"
    assert result.note == "no node in the cluster has the label block"
    assert not result.error and nodes_of(advice) == {"p1": None}


def test_a_child_whose_key_its_parents_domain_lacks_has_no_placement() -> None:
    cluster = [
        rack_node("n1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("n2", {"rack": "rack-2", "zone": "zone-2"}),
    ]
    asked = [
        composite("root", "zone", 1),
        gang("pg1", "block", 1, parent="root"),
        member("p1", "pg1", cpu="1"),
    ]
    advice = run(cluster, asked)
    root = advice.results[0]
    assert root.message == (
        "pod group is unschedulable, 0/2 placements are available, first placement status: "
        "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining"
    )
    (child,) = root.children  # the first placement's (zone-1's) try
    assert child.message == "no feasible placements found"
    assert child.note == "no node in its parent's domain has the label block"


def test_a_childs_scheduler_error_stops_its_parent() -> None:
    cluster = [
        rack_node("n1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("n2", {"rack": "rack-2", "zone": "zone-1"}),
        pod("a").namespace("ns").requests(cpu="1").scheduling_group("pg1").on("n1").obj(),
        pod("b")
        .namespace("ns")
        .requests(cpu="1")
        .scheduling_group("pg1")
        .on("n2")
        .obj(),  # pg1's pods in two racks: no single domain
    ]
    asked = [
        composite("root", "zone", 1),
        gang("pg1", "rack", 3, parent="root"),
        member("p", "pg1", cpu="1"),
    ]
    advice = run(cluster, asked)
    assert advice.results[0].error
    assert advice.message == (
        "composite pod group evaluation failed due to child error: "
        "cannot determine domain for already scheduled pods: "
        "more than 1 domain found for pod group: rack-1, rack-2"
    )


def test_running_pods_without_requests_count_at_the_non_zero_defaults() -> None:
    """NodeResourcesFit scores what runs on a node as NonZeroRequested: a pod that requests
    nothing counts 100m, so rack-2's idle-looking nodes are the more allocated."""
    cluster = [
        *(rack_node(f"a{i}", {"rack": "rack-1", "zone": "zone-1"}) for i in (1, 2)),
        *(rack_node(f"b{i}", {"rack": "rack-2", "zone": "zone-1"}) for i in (1, 2)),
    ]
    for i in range(5):
        sidecar = pod(f"agent-{i}").namespace("ns").requests(cpu="1").on("b1").obj()
        sidecar["spec"]["containers"][0]["resources"] = {}
        cluster.append(sidecar)
    advice = run(
        cluster,
        [
            gang("pg1", "rack", 2),
            member("p1", "pg1", cpu="1"),
            member("p2", "pg1", cpu="1"),
        ],
    )
    scores = {p.domain: p.scores["NodeResourcesFit"] for p in advice.results[0].placements}
    assert scores == {"rack-1": 50, "rack-2": 62}  # (2000 + 500) / 4000 → 62
    assert advice.results[0].domain == "rack-2" and not advice.results[0].tie


def test_balanced_allocation_uses_the_real_requests_and_skips_best_effort_pods() -> None:
    gib = 1024**3
    n = Node("n", allocatable={"cpu": 4000, "memory": 4 * gib, "pods": 110})
    free = dict(n.allocatable)

    def with_requests(requests: dict[str, str]):
        obj = member("x", "pg", cpu="1")
        obj["spec"]["containers"][0]["resources"] = {"requests": requests} if requests else {}
        got = pod_from_object(obj, "test")
        assert got is not None
        return got

    # NodeResourcesFit (LeastAllocated) counts the missing memory request as 200Mi:
    # CPU 50, memory (4096 - 200) / 4096 → 95, (50 + 95) // 2 = 72; BalancedAllocation
    # counts what the pod really requests: fractions 0.5 and 0 → (1 - 0.25) * 100 = 75
    # against 100 for the empty node, scored as the change: 50 + (50 + 75 - 100) // 2 = 62
    assert node_score(n, {}, free, with_requests({"cpu": "2"})) == 72 + 62
    # a pod that requests nothing: CPU (4000 - 100) / 4000 → 97, memory 95, no balance score
    assert node_score(n, {}, free, with_requests({})) == (97 + 95) // 2


# kube-scheduler v1.37.2's own table (noderesources/balanced_allocation_test.go): the CPU and
# memory fractions used before and after the pod, and the score it expects.
BALANCED_TABLE = [
    ("nothing scheduled, differently sized nodes: node1", (0, 0), (0.75, 0.5), 68),
    ("nothing scheduled, differently sized nodes: node2", (0, 0), (0.5, 0.5), 75),
    ("pods scheduled with resources: node1", (0.3, 0), (0.6, 0.25), 73),
    ("pods scheduled with resources: node2", (0.3, 0.25), (0.6, 0.5), 74),
    ("pods scheduled, differently sized nodes: node2", (0.3, 0.1), (0.6, 0.2), 70),
    ("nodes to reach min/max score: node1", (1.0, 0), (1.0, 1.0), 100),
    ("nodes to reach min/max score: node2", (0, 0), (0, 1.0), 50),
    ("requested resources at node capacity: node1", (0.5, 0), (1.0, 0), 62),
    ("requested resources at node capacity: node2", (0.5, 0.5), (1.0, 0.5), 62),
]


@pytest.mark.parametrize(("case", "before", "after", "score"), BALANCED_TABLE)
def test_balanced_allocation_as_kube_schedulers_table(
    case: str, before: tuple[float, float], after: tuple[float, float], score: int
) -> None:
    assert balanced_allocation(before, after) == score, case


def test_balanced_allocation_scores_the_change_the_pod_brings() -> None:
    """kube-scheduler 1.37 packs a second CPU-only pod onto the node the first took when
    the two nodes differ in size: the bigger node, already out of balance, loses less
    balance than the empty one would."""
    gib = 1024**3
    big = Node("big", allocatable={"cpu": 8000, "memory": 8 * gib, "pods": 110})
    small = Node("small", allocatable={"cpu": 4000, "memory": 8 * gib, "pods": 110})
    obj = member("x", "pg", cpu="1")
    one = pod_from_object(obj, "test")
    assert one is not None
    mib200 = 200 * 1024**2
    # big with one such pod already: CPU 1/8 used (real), 1000m and 200Mi scored
    big_free = {**big.allocatable, "cpu": 7000}
    on_big = node_score(big, {"cpu": 1000, "memory": mib200}, big_free, one)
    on_small = node_score(small, {}, dict(small.allocatable), one)
    # big: LeastAllocated (75 + 95) // 2 = 85; balance 87 after, 93 before → 50 + 44 // 2 = 72
    # small: LeastAllocated (75 + 97) // 2 = 86; balance 87 after, 100 before → 50 + 37 // 2 = 68
    assert (on_big, on_small) == (85 + 72, 86 + 68)
