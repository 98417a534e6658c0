"""Invariants of the simulator on random 3-level trees (block → rack → node).

Whatever Kueue's tie-breaks pick, a placement must hold every pod, respect each node's
free slots, keep a required job in one domain and every slice in one slice domain; and a
required job must fit whenever some domain has the room (the search is complete).
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from labeler.sim.common.shape import PodShape
from labeler.sim.kueue.assign import Job, Mode, SliceLayer
from labeler.sim.kueue.place import simulate
from labeler.sim.kueue.tree import Tree, leaf_capacity
from tests.sim.kueue.objects import BLOCK, RACK, gpu_nodes, topology, tree_of

KEYS = [BLOCK, RACK]
GPU = PodShape({"nvidia.com/gpu": 1})

racks = st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=4), min_size=1, max_size=3)
clusters = st.lists(racks, min_size=1, max_size=3)


def build(blocks: list[list[list[int]]]) -> tuple[Tree, dict[str, int]]:
    """The tree, and each node's free 1-GPU slots (8 allocatable, the rest used)."""
    spec = []
    free: dict[str, int] = {}
    for b, block in enumerate(blocks):
        for r, rack in enumerate(block):
            for h, slots in enumerate(rack):
                name = f"b{b}r{r}h{h}"
                spec.append(((f"b{b}", f"b{b}r{r}"), name, 8, 8 - slots))
                free[name] = slots
    return tree_of(topology(*KEYS), gpu_nodes(KEYS, spec)), free


@settings(max_examples=150, deadline=None)
@given(
    clusters,
    st.sampled_from([Mode.REQUIRED, Mode.PREFERRED, Mode.UNCONSTRAINED]),
    st.integers(0, 2),
    st.integers(1, 24),
    st.sampled_from([None, (1, 2), (2, 2), (1, 3), (0, 4)]),
)
def test_placements_are_valid_and_required_search_is_complete(
    blocks: list[list[list[int]]],
    mode: str,
    level: int,
    count: int,
    slicing: tuple[int, int] | None,
) -> None:
    tree, free = build(blocks)
    slices: tuple[SliceLayer, ...] = ()
    if slicing is not None:
        s_level, size = slicing
        if count % size or (mode != Mode.UNCONSTRAINED and s_level < level):
            return
        slices = (SliceLayer(s_level, size),)
    job = Job(count, mode, None if mode == Mode.UNCONSTRAINED else level, slices)
    out = simulate(tree, leaf_capacity(tree, GPU), job)

    if out.fits:
        assert out.total == count
        for a in out.assignment:
            assert 0 < a.count <= free[a.node]
        if mode == Mode.REQUIRED:
            assert len({a.values[: level + 1] for a in out.assignment}) == 1
        if slices:
            per: Counter[tuple[str, ...]] = Counter()
            for a in out.assignment:
                per[a.values[: slices[0].level + 1]] += a.count
            assert all(v % slices[0].size == 0 for v in per.values())

    if mode == Mode.REQUIRED:
        size = slices[0].size if slices else 1
        s_level = slices[0].level if slices else 2
        room: Counter[tuple[str, ...]] = Counter()
        units: Counter[tuple[str, ...]] = Counter()
        for leaf in tree.leaves:
            units[leaf.values[: s_level + 1]] += free[leaf.node.name]  # type: ignore[union-attr]
        for key, pods in units.items():
            room[key[: level + 1]] += pods // size
        assert out.fits == any(v >= count // size for v in room.values()), out.message
