"""The replacement search for one PodSet, with Kueue's own situations.

Re-stated from ``TestFindTopologyAssignmentsMultiLayerReplacement``
(``pkg/cache/scheduler/tas_cache_test.go``): the same nodes (a NotReady one is out of the
flavor's topology), the same admitted assignment and failed node, the same expected
assignment or Kueue message. As in that test, the failing Workload's own pods are not
counted on their nodes; "prior usage" is another Workload's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labeler.core.hotswap import incomplete_slice_domain, replacement_domain
from labeler.sim.kueue.replace import Replacement, search
from labeler.sim.kueue.workload import PodSet
from tests.builders import node
from tests.sim.kueue.test_workload import tree, workload

HOST = "kubernetes.io/hostname"
BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
SWITCH = "cloud.com/topology-switch"


def nodes(spec: Sequence[tuple[Sequence[str], str, str, bool]], keys: Sequence[str]) -> list[Any]:
    """(domain values, hostname, CPUs, ready) → Node objects with room for 10 pods."""
    return [
        node(host)
        .hostname()
        .labels(dict(zip(keys, values, strict=True)))
        .allocatable({"cpu": cpu, "pods": "10"})
        .ready(ready)
        .obj()
        for values, host, cpu, ready in spec
    ]


def main_podset(count: int, request: Mapping[str, Any]) -> PodSet:
    ps = {
        "name": "main",
        "count": count,
        "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        },
        "topologyRequest": dict(request),
    }
    return workload(ps).podsets[0]


def replace_one(
    spec: Sequence[tuple[Sequence[str], str, str, bool]],
    assignment: Mapping[str, int],
    failed: str,
    request: Mapping[str, Any],
    *,
    keys: Sequence[str] = (BLOCK, RACK),
    prior: Mapping[str, int] | None = None,
) -> Replacement:
    t = tree([*keys, HOST], nodes(spec, keys))
    used = {host: {"cpu": 1000 * n, "pods": n} for host, n in (prior or {}).items()}
    podset = main_podset(sum(assignment.values()), request)
    return search(t, podset, [((h,), n) for h, n in assignment.items()], failed, used)


def got(r: Replacement) -> dict[str, int] | str:
    return r.message or {values[-1]: n for values, n in r.assignment}


def test_replacement_does_not_cross_into_a_sibling_whose_name_extends_the_domains() -> None:
    r = replace_one(
        [(("b1", "rack-a"), "x1", "1", False), (("b1", "rack-a"), "x2", "1", True),
         (("b1", "rack-ab"), "x3", "1", True)],
        {"x1": 1, "x2": 1}, "x1", {"required": RACK}, prior={"x2": 1},
    )  # fmt: skip
    assert got(r) == (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 2; excluded: '
        'resource "cpu": 1, topologyDomain: 1'
    )
    assert r.domain == ("b1", "rack-a")


RACKS = [
    (("b1", "r1"), "x1", "1", True),
    (("b1", "r1"), "x2", "1", True),
    (("b1", "r2"), "x3", "1", False),
    (("b1", "r2"), "x4", "1", True),
]
SLICED = {
    "required": BLOCK,
    "podsetSliceRequiredTopologyConstraints": [{"topology": RACK, "size": 2}],
}


def test_an_incomplete_rack_slice_is_repaired_in_that_rack_on_the_tightest_node() -> None:
    r = replace_one(
        [*RACKS, (("b1", "r2"), "x5", "2", True)],
        {"x1": 1, "x2": 1, "x3": 1, "x4": 1}, "x3", SLICED,
    )  # fmt: skip
    assert got(r) == {"x1": 1, "x2": 1, "x4": 2}
    assert r.domain == ("b1", "r2") and r.candidates == (("x5", 2), ("x4", 1))


def test_no_room_in_the_incomplete_slices_rack_is_no_replacement() -> None:
    spec = [*RACKS[:3], (("b1", "r2"), "x4", "500m", True)]
    r = replace_one(spec, {"x1": 1, "x2": 1, "x3": 1, "x4": 1}, "x3", SLICED)
    assert got(r) == (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 3; excluded: '
        'resource "cpu": 1, topologyDomain: 2'
    )


def test_the_innermost_broken_layer_confines_the_search_to_one_switch() -> None:
    keys = (BLOCK, RACK, SWITCH)
    spec = [
        (("b1", "r1", "s1"), "x1", "4", True),
        (("b1", "r1", "s1"), "x2", "4", True),
        (("b1", "r1", "s2"), "x3", "4", False),
        (("b1", "r1", "s2"), "x4", "8", True),
        (("b1", "r2", "s3"), "x5", "4", True),
        (("b1", "r2", "s3"), "x6", "4", True),
        (("b1", "r2", "s4"), "x7", "4", True),
        (("b1", "r2", "s4"), "x8", "4", True),
    ]
    request = {
        "required": BLOCK,
        "podsetSliceRequiredTopologyConstraints": [
            {"topology": RACK, "size": 8},
            {"topology": SWITCH, "size": 4},
            {"topology": HOST, "size": 2},
        ],
    }
    r = replace_one(spec, {f"x{i}": 2 for i in range(1, 9)}, "x3", request, keys=keys)
    assert got(r) == {"x1": 2, "x2": 2, "x4": 4, "x5": 2, "x6": 2, "x7": 2, "x8": 2}
    assert r.domain == ("b1", "r1", "s2")


def test_lost_pods_keep_their_host_slice_size_rather_than_scattering() -> None:
    spec = [
        (("b1", "r1"), "x1", "2", True),
        (("b1", "r1"), "x2", "2", True),
        (("b1", "r2"), "x3", "2", False),
        (("b1", "r2"), "x4", "1", True),
        (("b1", "r2"), "x5", "1", True),
    ]
    request = {
        "required": BLOCK,
        "podsetSliceRequiredTopologyConstraints": [
            {"topology": RACK, "size": 4},
            {"topology": HOST, "size": 2},
        ],
    }
    r = replace_one(spec, {"x1": 2, "x2": 2, "x3": 2, "x4": 2}, "x3", request)
    assert got(r) == (
        'topology "default" doesn\'t allow to fit any of 1 slice(s). Total nodes: 4; excluded: '
        "topologyDomain: 2"
    )


def test_another_workloads_usage_on_the_only_candidate_blocks_the_replacement() -> None:
    r = replace_one(RACKS, {"x1": 1, "x2": 1, "x3": 1, "x4": 1}, "x3", SLICED, prior={"x4": 1})
    assert got(r) == (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 3; excluded: '
        'resource "cpu": 1, topologyDomain: 2'
    )


# --- the rule alone -----------------------------------------------------------------------


def test_the_domain_rule() -> None:
    left = [(("b1", "r1", "x1"), 1), (("b1", "r2", "x4"), 1)]
    assert replacement_domain(1, [], left, 1) == ("b1", "r1")  # required rack: the first's
    assert replacement_domain(None, [], left, 1) is None  # preferred: anywhere
    assert replacement_domain(1, [], [], 1) is None  # nothing left to stay near
    assert replacement_domain(0, [(1, 2)], left, 2) == ("b1",)  # whole slices: the block
    assert replacement_domain(0, [(1, 2)], left, 1) == ("b1", "r1")  # r1 has 1 + 1 = 2
    assert incomplete_slice_domain(left, 3, 1, 2) == ("b1", "r1")  # first of two by values
    assert incomplete_slice_domain(left, 2, 1, 2) is None  # no rack completes a slice
