"""Balanced placement (Kueue's ``TASBalancedPlacement``), with Kueue's own situations.

The whole-Workload table re-states the ``"balanced placement; …"`` and ``"stable tie break
…"`` cases of Kueue's ``TestFindTopologyAssignments``
(``pkg/cache/scheduler/tas_cache_test.go``): the same nodes, requests and expected
assignments, run through our Workload reader and placement with the gate on. The
function-level tests re-state ``tas_balanced_placement_test.go`` on hand-set domain counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from labeler.sim.kueue.admit import WorkloadResult, place_workload
from labeler.sim.kueue.assign import Job
from labeler.sim.kueue.balanced import (
    Order,
    best_domains,
    by_capacity_and_entropy,
    optimal_set,
    place,
    prune,
)
from labeler.sim.kueue.gates import BALANCED, Gates
from labeler.sim.kueue.tree import Domain, Tree
from tests.builders import node
from tests.sim.kueue.test_workload import podset, tree, workload

HOST = "kubernetes.io/hostname"
BLOCK = "cloud.com/topology-block"
SUBBLOCK = "cloud.com/topology-subblock"
RACK = "cloud.com/topology-rack"
GPU = "example.com/gpu"
ON = Gates({BALANCED: True})


@dataclass(frozen=True)
class Ps:
    """One PodSet of a case and the assignment Kueue expects (leaf → pods)."""

    name: str
    count: int
    want: Mapping[str, int]
    preferred: str | None = None
    required: str | None = None
    slice_size: int | None = None
    slice_level: str | None = None
    group: str | None = None
    gpu: int = 1


@dataclass(frozen=True)
class Case:
    name: str
    levels: tuple[str, ...]
    nodes: Sequence[tuple[tuple[str, ...], str, int, int]]  # (values, hostname, GPUs, pods)
    podsets: Sequence[Ps]
    gates: Gates = field(default_factory=lambda: ON)

    def __str__(self) -> str:
        return self.name


CASES = [
    Case(
        "basic",
        (BLOCK, RACK, HOST),
        [(("b1", "r1"), "x1", 15, 25), (("b1", "r2"), "x2", 15, 25)],
        [Ps("main", 25, {"x1": 13, "x2": 12}, preferred=RACK)],
    ),
    Case(
        "select optimal set of domains",
        (BLOCK, RACK, HOST),
        [(("b1", "r1"), "x1", 15, 23), (("b1", "r1"), "x2", 13, 23), (("b1", "r1"), "x3", 10, 23)],
        [Ps("main", 23, {"x1": 12, "x2": 11}, preferred=RACK)],
    ),
    Case(
        "select optimal set of domains; with slices",
        (BLOCK, RACK, HOST),
        [(("b1", "r1"), "x1", 20, 25), (("b1", "r1"), "x2", 15, 25), (("b1", "r1"), "x3", 10, 25)],
        [Ps("main", 25, {"x2": 15, "x3": 10}, preferred=RACK, slice_size=5, slice_level=HOST)],
    ),
    Case(
        "select correct block",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 20, 22),
            (("b1", "r1"), "x2", 10, 22),
            (("b2", "r2"), "x3", 15, 22),
            (("b2", "r2"), "x4", 15, 22),
        ],
        [Ps("main", 22, {"x3": 11, "x4": 11}, preferred=RACK, slice_size=1)],
    ),
    Case(
        "cannot choose domains from different blocks",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 14, 25),
            (("b1", "r1"), "x2", 11, 25),
            (("b2", "r2"), "x3", 15, 25),
            (("b2", "r2"), "x4", 10, 25),
        ],
        [Ps("main", 25, {"x1": 14, "x2": 11}, preferred=RACK, slice_size=1)],
    ),
    Case(
        "select correct block; prefer blocks with single rack; with slices",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 15, 25),
            (("b1", "r2"), "x2", 15, 25),
            (("b1", "r3"), "x3", 15, 25),
            (("b1", "r3"), "x4", 15, 25),
        ],
        [Ps("main", 25, {"x3": 15, "x4": 10}, preferred=RACK, slice_size=5, slice_level=HOST)],
    ),
    Case(
        "four level topology; slice two levels below balanced level",
        (BLOCK, SUBBLOCK, RACK, HOST),
        [
            (("b1", "sb1", "r1"), "x1", 18, 20),
            (("b1", "sb1", "r2"), "x2", 8, 20),
            (("b1", "sb2", "r3"), "x3", 15, 20),
            (("b1", "sb2", "r4"), "x4", 9, 20),
            (("b1", "sb2", "r4"), "x5", 7, 20),
        ],
        [
            Ps(
                "main",
                20,
                {"x3": 10, "x4": 8, "x5": 2},
                preferred=SUBBLOCK,
                slice_size=2,
                slice_level=HOST,
            )
        ],
    ),
    Case(
        "four level topology; slice one level below balanced level",
        (BLOCK, SUBBLOCK, RACK, HOST),
        [
            (("b1", "sb1", "r1"), "x1", 18, 20),
            (("b1", "sb1", "r2"), "x2", 8, 20),
            (("b1", "sb2", "r3"), "x3", 15, 20),
            (("b1", "sb2", "r4"), "x4", 9, 20),
            (("b1", "sb2", "r4"), "x5", 7, 20),
        ],
        [
            Ps(
                "main",
                20,
                {"x3": 10, "x4": 3, "x5": 7},
                preferred=SUBBLOCK,
                slice_size=2,
                slice_level=RACK,
            )
        ],
    ),
    Case(
        "four level topology; balance on rack level; slice not on the lowest level",
        (BLOCK, SUBBLOCK, RACK),
        [
            (("b1", "sb1", "r1"), "x1", 18, 20),
            (("b1", "sb1", "r2"), "x2", 8, 20),
            (("b1", "sb2", "r3"), "x3", 15, 20),
            (("b1", "sb2", "r4"), "x4", 15, 20),
        ],
        [
            Ps(
                "main",
                20,
                {"b1/sb2/r3": 10, "b1/sb2/r4": 10},
                preferred=SUBBLOCK,
                slice_size=2,
                slice_level=RACK,
            )
        ],
    ),
    Case(
        "three level topology; balance on the same level as slice",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 15, 22),
            (("b1", "r1"), "x2", 13, 22),
            (("b1", "r1"), "x3", 10, 22),
            (("b1", "r2"), "x4", 20, 22),
            (("b1", "r2"), "x5", 8, 22),
        ],
        [Ps("main", 22, {"x2": 12, "x3": 10}, preferred=HOST, slice_size=2, slice_level=HOST)],
    ),
    Case(
        "three level topology; balance on the lowest level",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 20, 22),
            (("b1", "r1"), "x2", 8, 22),
            (("b1", "r2"), "x3", 15, 22),
            (("b1", "r2"), "x4", 13, 22),
            (("b1", "r2"), "x5", 10, 22),
        ],
        [Ps("main", 22, {"x3": 11, "x4": 11}, preferred=HOST)],
    ),
    Case(
        "leader worker set",
        (BLOCK, RACK, HOST),
        [(("b1", "r1"), "x1", 20, 24), (("b1", "r1"), "x2", 15, 24), (("b1", "r1"), "x3", 12, 24)],
        [
            Ps("leader", 1, {"x3": 1}, preferred=RACK, slice_level=HOST, group="g"),
            Ps(
                "workers",
                25,
                {"x2": 15, "x3": 10},
                preferred=RACK,
                slice_size=5,
                slice_level=HOST,
                group="g",
            ),
        ],
    ),
    Case(
        "prioritize (using entropy) balanced domains; second rack wins",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 10, 20),
            (("b1", "r1"), "x2", 5, 20),
            (("b1", "r2"), "x3", 5, 20),
            (("b1", "r2"), "x4", 5, 20),
            (("b1", "r2"), "x5", 5, 20),
        ],
        [Ps("main", 15, {"x3": 5, "x4": 5, "x5": 5}, preferred=RACK)],
    ),
    Case(
        "prioritize (using entropy) balanced domains; first rack wins",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 8, 24),
            (("b1", "r1"), "x2", 8, 24),
            (("b1", "r1"), "x3", 8, 24),
            (("b1", "r2"), "x4", 16, 24),
            (("b1", "r2"), "x5", 8, 24),
        ],
        [Ps("main", 24, {"x1": 8, "x2": 8, "x3": 8}, preferred=RACK)],
    ),
    Case(
        "two level topology; balance on the highest level",
        (RACK, HOST),
        [
            (("r1",), "x1", 21, 22),
            (("r1",), "x2", 9, 22),
            (("r2",), "x3", 11, 22),
            (("r2",), "x4", 10, 22),
            (("r2",), "x5", 10, 22),
        ],
        [Ps("main", 23, {"x1": 12, "x3": 11}, preferred=RACK)],
    ),
    Case(
        "select correct block taking into account pruning",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 5, 20),
            (("b1", "r1"), "x2", 5, 20),
            (("b1", "r2"), "x3", 5, 20),
            (("b1", "r2"), "x4", 5, 20),
            (("b2", "r3"), "x5", 10, 20),
            (("b2", "r3"), "x6", 4, 20),
            (("b2", "r3"), "x7", 4, 20),
            (("b2", "r3"), "x8", 4, 20),
            (("b2", "r4"), "x9", 5, 20),
            (("b2", "r5"), "x10", 5, 20),
        ],
        [Ps("main", 20, {"x1": 5, "x2": 5, "x3": 5, "x4": 5}, preferred=RACK)],
    ),
    Case(
        "should not prune domain",
        (BLOCK, RACK, HOST),
        [(("b1", "r1"), "x1", 6, 24), (("b1", "r1"), "x2", 5, 24)],
        [
            Ps("leader", 1, {"x1": 1}, preferred=RACK, slice_level=HOST, group="g"),
            Ps("workers", 10, {"x1": 5, "x2": 5}, preferred=RACK, group="g"),
        ],
    ),
    Case(
        "leader worker set does not reserve leader space on every node",
        (BLOCK, RACK, HOST),
        [(("b1", "r1"), "x1", 7, 12), (("b1", "r1"), "x2", 5, 12)],
        [
            Ps("leader", 1, {"x1": 1}, preferred=RACK, slice_level=HOST, group="g"),
            Ps("workers", 10, {"x1": 5, "x2": 5}, preferred=RACK, group="g"),
        ],
    ),
    Case(
        "fallback to BestFit when leader worker set cannot meet threshold",
        (BLOCK, RACK, HOST),
        [
            (("b1", "r1"), "x1", 3, 12),
            (("b1", "r2"), "x2", 3, 12),
            (("b1", "r3"), "x3", 8, 12),
            (("b2", "r1"), "x4", 11, 12),
        ],
        [
            Ps("leader", 1, {"x3": 1}, preferred=BLOCK, slice_level=HOST, group="g", gpu=5),
            Ps("workers", 7, {"x1": 3, "x2": 1, "x3": 3}, preferred=BLOCK, group="g"),
        ],
    ),
]
# Two identical nodes listed in either order: the one sorting first by name wins, with the
# gate on or off ("stable tie break on identical nodes").
for _gates, _word in ((ON, "enabled"), (Gates({BALANCED: False}), "disabled")):
    for _order in (("x2", "x1"), ("x1", "x2")):
        CASES.append(
            Case(
                f"stable tie break on identical nodes {'/'.join(_order)}: {_word}",
                (BLOCK, RACK, HOST),
                [(("b1", "r1"), h, 1, 10) for h in _order],
                [Ps("main", 1, {"x1": 1}, required=HOST)],
                gates=_gates,
            )
        )


def cluster(case: Case) -> Tree:
    keys = [k for k in case.levels if k != HOST]
    items = [
        node(host)
        .hostname()
        .labels(dict(zip(keys, values, strict=True)))
        .allocatable({GPU: str(gpus), "pods": str(pods)})
        .obj()
        for values, host, gpus, pods in case.nodes
    ]
    return tree(case.levels, items)


def podsets(case: Case) -> list[dict[str, Any]]:
    return [
        podset(
            p.name,
            p.count,
            {GPU: str(p.gpu)},
            preferred=p.preferred,
            required=p.required,
            group=p.group,
            slice_level=p.slice_level if p.slice_size else None,
            slice_size=p.slice_size,
        )
        for p in case.podsets
    ]


def leaves(result: WorkloadResult, hostname: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in result.podsets:
        assert r.outcome.fits, r.outcome.message
        out[r.podset.name] = {
            (a.values[-1] if hostname else "/".join(a.values)): a.count
            for a in r.outcome.assignment
        }
    return out


@pytest.mark.parametrize("case", CASES, ids=str)
def test_kueue_balanced_placement_cases(case: Case) -> None:
    result = place_workload(cluster(case), workload(*podsets(case)), gates=case.gates)
    assert leaves(result, case.levels[-1] == HOST) == {p.name: p.want for p in case.podsets}


def test_balanced_placement_is_off_by_default_and_best_fit_fills_a_rack_first() -> None:
    basic = CASES[0]
    result = place_workload(cluster(basic), workload(*podsets(basic)))
    assert leaves(result, True) == {"main": {"x1": 15, "x2": 10}}
    on = place_workload(cluster(basic), workload(*podsets(basic)), gates=ON)
    assert on.podsets[0].outcome.balanced and not result.podsets[0].outcome.balanced


# --- the algorithm's parts, on hand-set counts (tas_balanced_placement_test.go) ---------


def dom(
    name: str,
    pods: int = 0,
    slices: int = 0,
    leaders: int = 0,
    pods_wl: int = 0,
    slices_wl: int = 0,
    *,
    values: tuple[str, ...] | None = None,
    children: Sequence[Domain] = (),
) -> Domain:
    d = Domain(values or (name,), None, None)
    d.pods, d.slices, d.leaders, d.pods_wl, d.slices_wl = pods, slices, leaders, pods_wl, slices_wl
    d.children = list(children)
    for c in children:
        c.parent = d
    return d


def counts(d: Domain) -> tuple[int, int, int, int, int]:
    return d.pods, d.slices, d.pods_wl, d.slices_wl, d.leaders


def names(domains: Sequence[Domain] | None) -> list[str]:
    return ["/".join(d.values) for d in domains or []]


def four() -> list[Domain]:
    return [
        dom("d1", 9, 9, 1, 8, 8),
        dom("d2", 6, 6, 0, 6, 6),
        dom("d3", 4, 4, 1, 3, 3),
        dom("d4", 2, 2, 0, 2, 2),
    ]


@pytest.mark.parametrize(
    ("workers", "leaders", "want"),
    [
        (22, 0, []),  # no fit
        (5, 1, ["d1"]),  # one domain with the leader
        (9, 1, ["d2", "d3"]),  # a perfect fit with two domains
        (10, 1, ["d1", "d4"]),  # another perfect fit with two
        (5, 0, ["d2"]),  # the tightest single domain
    ],
)
def test_optimal_set_fewest_domains_then_least_spare(
    workers: int, leaders: int, want: list[str]
) -> None:
    assert sorted(names(optimal_set(four(), workers, leaders, 1, Order.ENTROPY))) == want


@pytest.mark.parametrize("order", list(Order))
def test_optimal_set_ties_go_to_the_first_domain_by_values(order: Order) -> None:
    same = dict(pods=3, slices=3, pods_wl=3, slices_wl=3)
    domains = [
        dom("a", **same, values=("block-b", "host-a")),
        dom("m", **same, values=("block-b", "host-m")),
        dom("z", **same, values=("block-a", "host-z")),
        dom("zz", **same, values=("block-a", "host-zz")),
    ]
    assert names(optimal_set(domains, 1, 0, 1, order)) == ["block-a/host-z"]


def _with_children(name: str, values: str, leaders: int, slices_wl: int, *pods: int) -> Domain:
    kids = [dom(f"{name}-{i}", p, values=(values, f"c{i}")) for i, p in enumerate(pods)]
    return dom(name, 0, 0, leaders, 0, slices_wl, values=(values,), children=kids)


def test_capacity_and_entropy_order() -> None:
    tied = [
        _with_children("a", "block-b/host-a", 1, 5, 2, 2),
        _with_children("m", "block-b/host-m", 1, 5, 2, 2),
        _with_children("z", "block-a/host-z", 1, 5, 2, 2),
    ]
    assert names(by_capacity_and_entropy(tied)) == [
        "block-a/host-z",
        "block-b/host-a",
        "block-b/host-m",
    ]
    mixed = [
        _with_children("lower-leader", "a", 0, 100, 50, 50),
        _with_children("lower-capacity", "b", 1, 4, 2, 2),
        _with_children("low-entropy", "c", 1, 5, 4, 0),
        _with_children("high-entropy", "d", 1, 5, 2, 2),
    ]
    # leaders first, then capacity with the leader, then evenly filled children
    assert names(by_capacity_and_entropy(mixed)) == ["d", "c", "b", "a"]


def _eighteen() -> list[Domain]:
    return [
        dom("d1", 18, 18, 0, 18, 18),
        dom("d2", 18, 18, 0, 18, 18),
        dom("d3", 18, 18, 0, 18, 18),
        dom("d4", 10, 10, 0, 10, 10),
        dom("d5", 2, 2, 0, 2, 2),
    ]


@pytest.mark.parametrize(
    ("count", "threshold", "among", "want"),
    [
        (20, 10, 3, {"d1": 10, "d2": 10}),
        (40, 13, 3, {"d1": 14, "d2": 13, "d3": 13}),
        (2, 2, 5, {"d5": 2}),  # the smallest domain that fits
        (25, 10, 5, {"d1": 15, "d4": 10}),
    ],
)
def test_place_gives_each_domain_the_threshold_and_the_first_the_rest(
    count: int, threshold: int, among: int, want: dict[str, int]
) -> None:
    chosen, reason = place(_eighteen()[:among], count, 0, 1, threshold)
    assert reason == ""
    assert {names([d])[0]: d.slices for d in chosen or []} == want
    for d in chosen or []:
        assert counts(d) == (d.slices, d.slices, d.slices, d.slices, 0)


def test_place_ties_go_to_the_first_domain_by_values() -> None:
    same = dict(pods=3, slices=3, pods_wl=3, slices_wl=3)
    domains = [
        dom("a", **same, values=("block-b", "host-a")),
        dom("z", **same, values=("block-a", "host-z")),
    ]
    chosen, reason = place(domains, 1, 0, 1, 1)
    assert reason == "" and names(chosen) == ["block-a/host-z"]


def test_prune_keeps_a_domain_for_workers_when_it_cannot_host_the_leader() -> None:
    leader_leaf = dom("l", 6, 6, 1, 5, 5, values=("p", "l", "x"))
    leader_dom = dom("l", 6, 6, 1, 5, 5, values=("p", "l"), children=[leader_leaf])
    worker_leaf = dom("w", 5, 5, 1, 4, 4, values=("p", "w", "x"))
    worker_dom = dom("w", 5, 5, 1, 4, 4, values=("p", "w"), children=[worker_leaf])
    parent = dom("p", children=[leader_dom, worker_dom])
    prune([parent], 5, 1, 2, True)
    assert counts(leader_dom) == (6, 6, 5, 5, 1)
    assert counts(parent) == (11, 11, 10, 10, 1)
    assert counts(worker_dom) == (5, 5, 0, 0, 0)
    assert counts(worker_leaf) == (5, 5, 0, 0, 0)


def _blocks(racks: Sequence[tuple[str, str, int, int, int, int, int]], blocks: int) -> Tree:
    tops = [dom(f"b{i}") for i in range(1, blocks + 1)]
    by_name = {t.values[0]: t for t in tops}
    leaves: list[Domain] = []
    for block, rack, pods, slices, pods_wl, slices_wl, leaders in racks:
        leaf = dom(rack, pods, slices, leaders, pods_wl, slices_wl, values=(block, rack))
        leaf.parent = by_name[block]
        by_name[block].children.append(leaf)
        leaves.append(leaf)
    return Tree("t", (BLOCK, RACK), [tops, leaves], leaves)


def test_best_domains_retries_with_the_threshold_that_reserves_the_leader() -> None:
    # "falls back after pruning": threshold 2 leaves no fit, 1 does, over both blocks
    racks = [
        ("b1", "r1", 3, 3, 2, 2, 1),
        ("b2", "r1", 2, 2, 1, 1, 1),
        ("b2", "r2", 4, 4, 2, 2, 1),
    ]
    domains, threshold = best_domains(_blocks(racks, 2), Job(8, leaders=1), 0, 1)
    assert (threshold, len(domains)) == (1, 2)


def test_best_domains_gives_up_when_even_the_leader_threshold_fails() -> None:
    # "rejects after fallback"
    racks = [
        ("b1", "r1", 2, 2, 1, 1, 1),
        ("b2", "r1", 3, 3, 1, 1, 1),
        ("b2", "r2", 4, 4, 2, 2, 1),
        ("b3", "r1", 4, 4, 3, 3, 1),
    ]
    domains, threshold = best_domains(_blocks(racks, 3), Job(12, leaders=1), 0, 1)
    assert (threshold, len(domains)) == (0, 0)
