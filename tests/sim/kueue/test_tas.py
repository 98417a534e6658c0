"""The simulator against KEP-2724's worked examples and Kueue's documented behaviour.

Golden vectors: KEP-2724 "Computing the assignment" (3,3,2,1 nodes, 7 pods), "Two-level
Topology Aware scheduling" (6,5,4,3,2 nodes, host slices of 2), "Multi-level" (block →
rack → host, 64 pods). Failure texts follow kueue's ``notFitMessage`` and
``multiLayerNotFitMessage`` formats.
"""

from __future__ import annotations

from labeler.sim.common.shape import PodShape
from labeler.sim.kueue.assign import (
    Job,
    Mode,
    Outcome,
    SliceLayer,
)
from labeler.sim.kueue.place import simulate
from labeler.sim.kueue.tree import Tree, leaf_capacity
from tests.sim.kueue.objects import BLOCK, HOST, RACK, cpu_nodes, gpu_nodes, topology, tree_of

GPU = PodShape({"nvidia.com/gpu": 1})
CPU = PodShape({"cpu": 1000})


def run(tree: Tree, job: Job, shape: PodShape = GPU) -> Outcome:
    return simulate(tree, leaf_capacity(tree, shape), job)


def counts(outcome: Outcome) -> dict[str, int]:
    return {a.node: a.count for a in outcome.assignment}


def one_rack(*free: int) -> Tree:
    """A rack whose nodes n1, n2, … fit ``free`` pods each."""
    spec = [(("r1",), f"n{i}", f, 0) for i, f in enumerate(free, start=1)]
    return tree_of(topology(RACK), gpu_nodes([RACK], spec))


# --- KEP-2724 golden vectors ------------------------------------------------------------


def test_kep_best_fit_takes_the_two_largest_then_the_tightest_last_node() -> None:
    out = run(one_rack(3, 3, 2, 1), Job(7, Mode.REQUIRED, 0))
    assert out.fits
    assert counts(out) == {"n1": 3, "n2": 3, "n4": 1}


def test_kep_least_free_capacity_starts_from_the_smallest_node() -> None:
    out = run(one_rack(1, 2, 3, 3), Job(7, Mode.UNCONSTRAINED))
    assert counts(out) == {"n1": 1, "n2": 2, "n3": 3, "n4": 1}


def test_kep_best_fit_with_host_slices_of_two() -> None:
    out = run(one_rack(6, 5, 4, 3, 2), Job(12, Mode.REQUIRED, 0, (SliceLayer(1, 2),)))
    assert counts(out) == {"n1": 6, "n3": 4, "n5": 2}


def test_kep_least_free_capacity_with_host_slices_of_two() -> None:
    out = run(one_rack(6, 5, 4, 3, 2), Job(10, Mode.UNCONSTRAINED, None, (SliceLayer(1, 2),)))
    assert counts(out) == {"n2": 2, "n3": 4, "n4": 2, "n5": 2}


def test_kep_multi_level_example_fills_every_host() -> None:
    keys = [BLOCK, RACK]
    spec = [
        ((b, f"{b}-r{r}"), f"{b}-r{r}-x{h}", 8, 0)
        for b in ("b1", "b2")
        for r in (1, 2)
        for h in range(4)
    ]
    tree = tree_of(topology(*keys), gpu_nodes(keys, spec))
    job = Job(64, Mode.REQUIRED, 0, (SliceLayer(0, 32), SliceLayer(1, 16)))
    out = run(tree, job)
    assert out.fits and out.fit_level == 0
    assert {a.count for a in out.assignment} == {8}
    assert len({a.values[0] for a in out.assignment}) == 1  # one block


# --- Kueue's documented behaviour (tas_cache_test scenarios, re-expressed) ---------------


def test_minimises_racks_before_nodes() -> None:
    # b1: r1{x3:2} r2{x5:2} r3{x1,x6,x2,x4: 1 each}; 4 pods in one block → rack r3
    keys = [BLOCK, RACK]
    tree = tree_of(
        topology(*keys),
        cpu_nodes(
            keys,
            [
                (("b1", "r1"), "x3", "2"),
                (("b1", "r2"), "x5", "2"),
                (("b1", "r3"), "x1", "1"),
                (("b1", "r3"), "x6", "1"),
                (("b1", "r3"), "x2", "1"),
                (("b1", "r3"), "x4", "1"),
            ],
        ),
    )
    out = run(tree, Job(4, Mode.REQUIRED, 0), CPU)
    assert counts(out) == {"x1": 1, "x2": 1, "x4": 1, "x6": 1}


def test_exclusion_statistics_in_kueue_words() -> None:
    keys: list[str] = []
    items = cpu_nodes(keys, [((), "x1", "1"), ((), "x2", "1"), ((), "x3", "2"), ((), "x4", "100m")])
    items[0]["spec"]["taints"] = [{"key": "key", "value": "value", "effect": "NoSchedule"}]
    items[1]["metadata"]["labels"]["zone"] = "zone-b"
    items[2]["metadata"]["labels"]["zone"] = "zone-b"
    items[3]["metadata"]["labels"]["zone"] = "zone-a"
    tree = tree_of(topology(RACK), _flat(items))
    shape = PodShape({"cpu": 1000}, node_selector={"zone": "zone-a"})
    out = run(tree, Job(1, Mode.REQUIRED, 1), shape)
    assert out.message == (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; excluded: '
        'nodeSelector: 2, resource "cpu": 1, taint "key=value:NoSchedule": 1'
    )


def _flat(items: list[dict[str, object]]) -> list[dict[str, object]]:
    for it in items:
        it["metadata"]["labels"][RACK] = "r1"  # type: ignore[index]
    return items


def test_limiting_resource_ties_break_alphabetically() -> None:
    items = _flat(cpu_nodes([], [((), "dual", "500m")]))
    items[0]["status"]["allocatable"]["example.com/gpu"] = "0"  # type: ignore[index]
    tree = tree_of(topology(RACK), items)
    out = run(tree, Job(1, Mode.REQUIRED, 1), PodShape({"cpu": 1000, "example.com/gpu": 1}))
    assert out.message.endswith('Total nodes: 1; excluded: resource "cpu": 1')


def test_required_reports_the_best_single_domain() -> None:
    out = run(one_rack(2, 1, 1), Job(6, Mode.REQUIRED, 0))
    assert out.message == 'topology "default" allows to fit only 4 out of 6 pod(s)'
    sliced = run(one_rack(2, 1, 1), Job(6, Mode.REQUIRED, 0, (SliceLayer(1, 2),)))
    assert sliced.message == 'topology "default" allows to fit only 1 out of 3 slice(s)'


def test_multi_layer_host_rounding_makes_the_rack_slice_impossible() -> None:
    keys = [BLOCK, RACK]
    spec = [(("b1", "r1"), "x1", "3"), (("b1", "r1"), "x2", "3"), (("b1", "r1"), "x3", "0")]
    tree = tree_of(topology(*keys), cpu_nodes(keys, spec))
    out = run(tree, Job(6, Mode.REQUIRED, 0, (SliceLayer(1, 6), SliceLayer(2, 2))), CPU)
    assert out.message == (
        f'topology "default" doesn\'t allow to fit; 0/1 slice(s) fit on level {RACK}; '
        f'2/3 slice(s) fit on level {HOST}. Total nodes: 3; excluded: resource "cpu": 1'
    )


def test_multi_layer_small_host_kills_rack_slices() -> None:
    keys = [BLOCK, RACK]
    spec = [
        (("b1", "r1"), "x1", "7"),
        (("b1", "r1"), "x2", "4"),
        (("b1", "r2"), "x3", "7"),
        (("b1", "r2"), "x4", "3"),
    ]
    tree = tree_of(topology(*keys), cpu_nodes(keys, spec))
    out = run(tree, Job(16, Mode.REQUIRED, 0, (SliceLayer(1, 8), SliceLayer(2, 4))), CPU)
    assert out.message == (
        f'topology "default" doesn\'t allow to fit; 1/2 slice(s) fit on level {RACK}; '
        f"3/4 slice(s) fit on level {HOST}"
    )


def test_multi_layer_places_whole_inner_groups() -> None:
    keys = [BLOCK, RACK]
    spec = [
        (("b1", "r1"), "x1", "4"),
        (("b1", "r1"), "x2", "3"),
        (("b1", "r2"), "x3", "4"),
        (("b1", "r2"), "x4", "4"),
    ]
    tree = tree_of(topology(*keys), cpu_nodes(keys, spec))
    out = run(tree, Job(8, Mode.REQUIRED, 0, (SliceLayer(1, 8), SliceLayer(2, 2))), CPU)
    assert out.fits
    assert all(a.count % 2 == 0 for a in out.assignment)
    assert counts(out) == {"x3": 4, "x4": 4}  # r1 rounds to 4+2=6 < 8


def test_preferred_climbs_then_spreads_at_the_top() -> None:
    keys = [BLOCK, RACK]
    spec = [
        (("b1", "r1"), "a", 8, 4),
        (("b1", "r2"), "b", 8, 6),
        (("b2", "r1"), "c", 8, 5),
    ]
    tree = tree_of(topology(*keys), gpu_nodes(keys, spec))
    # 5 pods: no rack has 5 (4, 2, 3), block b1 has 6 → climbs one level
    out = run(tree, Job(5, Mode.PREFERRED, 1))
    assert out.fits and out.fit_level == 0 and not out.spread
    assert counts(out) == {"a": 4, "b": 1}
    # 8 pods: no block has 8 → spread over both blocks
    out = run(tree, Job(8, Mode.PREFERRED, 1))
    assert out.fits and out.spread and out.total == 8
    # 10 pods: only 9 free anywhere
    out = run(tree, Job(10, Mode.PREFERRED, 1))
    assert out.message == 'topology "default" allows to fit only 9 out of 10 pod(s)'


def test_required_never_climbs() -> None:
    keys = [BLOCK, RACK]
    spec = [(("b1", "r1"), "a", 4, 0), (("b1", "r2"), "b", 4, 0)]
    tree = tree_of(topology(*keys), gpu_nodes(keys, spec))
    assert not run(tree, Job(6, Mode.REQUIRED, 1)).fits
    assert run(tree, Job(6, Mode.REQUIRED, 0)).fits


def test_best_fit_prefers_the_tightest_domain_that_fits() -> None:
    keys = [BLOCK, RACK]
    spec = [
        (("b1", "r1"), "big", 8, 0),
        (("b1", "r2"), "tight", 8, 5),
        (("b1", "r3"), "mid", 8, 3),
    ]
    tree = tree_of(topology(*keys), gpu_nodes(keys, spec))
    out = run(tree, Job(3, Mode.REQUIRED, 1))
    assert counts(out) == {"tight": 3}


def test_ties_break_on_level_values() -> None:
    out = run(one_rack(2, 2, 2), Job(2, Mode.REQUIRED, 1))
    assert counts(out) == {"n1": 2}


def test_slice_level_above_requested_level_is_kueues_error() -> None:
    keys = [BLOCK, RACK]
    tree = tree_of(topology(*keys), gpu_nodes(keys, [(("b1", "r1"), "a", 8, 0)]))
    out = run(tree, Job(4, Mode.REQUIRED, 1, (SliceLayer(0, 2),)))
    assert out.message == f"podset slice topology {BLOCK} is above the podset topology {RACK}"


def test_slices_never_straddle_two_slice_domains() -> None:
    # two racks with 3 free each: 6 pods, but 2 slices of 3 per rack fit; slices of 4 do not
    keys = [BLOCK, RACK]
    spec = [
        (("b1", "r1"), "a", 2, 0),
        (("b1", "r1"), "b", 1, 0),
        (("b1", "r2"), "c", 2, 0),
        (("b1", "r2"), "d", 1, 0),
    ]
    tree = tree_of(topology(*keys), gpu_nodes(keys, spec))
    assert run(tree, Job(6, Mode.REQUIRED, 0, (SliceLayer(1, 3),))).fits
    out = run(tree, Job(4, Mode.REQUIRED, 0, (SliceLayer(1, 4),)))
    assert out.message == 'topology "default" doesn\'t allow to fit any of 1 slice(s)'


def test_state_does_not_leak_between_runs() -> None:
    tree = one_rack(3, 3, 2, 1)
    cap = leaf_capacity(tree, GPU)
    first = simulate(tree, cap, Job(7, Mode.REQUIRED, 0))
    simulate(tree, cap, Job(1, Mode.UNCONSTRAINED))
    assert simulate(tree, cap, Job(7, Mode.REQUIRED, 0)) == first
