"""The simulator's shortcuts (per-node caches, the heap of identical pods, one try reused for
every identical child) change nothing: on random clusters, PodGroups and CompositePodGroup
hierarchies, with siblings that are often identical, the answer with them is the answer
computed in full (every pod filtered and scored on every node of every placement)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from labeler.sim.common.cluster import snapshot_from_objects
from labeler.sim.kubesched.objects import collect
from labeler.sim.kubesched.results import GroupResult
from labeler.sim.kubesched.schedule import Advice, advise
from tests.builders import node, pod
from tests.sim.kubesched.podgroups import basic, composite, gang

# per zone, per rack: the CPU already used on each node (of 2)
zones = st.lists(
    st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=3), min_size=1, max_size=3),
    min_size=1,
    max_size=3,
)
# a PodGroup: topology key, minCount (0: basic policy), its pods' CPUs
leaf = st.tuples(
    st.sampled_from(["rack", None]),
    st.integers(0, 3),
    st.lists(st.sampled_from(["1", "1", "2"]), min_size=1, max_size=3),
)
# a CompositePodGroup: its key, minGroupCount (0: basic), its children
middle = st.tuples(
    st.sampled_from(["zone", "rack", None]),
    st.integers(0, 3),
    st.lists(leaf, min_size=1, max_size=3).map(lambda kids: kids + kids[:1]),
)
roots = st.one_of(
    st.tuples(
        st.sampled_from(["zone", None]),
        st.integers(0, 3),
        st.lists(st.one_of(leaf, middle), min_size=1, max_size=3),
    ),
    # a PodGroup of its own (a basic one is placed pod by pod)
    st.tuples(
        st.sampled_from(["zone", "rack", None]),
        st.integers(0, 3),
        st.lists(st.sampled_from(["1", "2"]), min_size=1, max_size=6),
    ),
)


def _cluster(layout: list[list[list[int]]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for z, racks in enumerate(layout):
        for r, used in enumerate(racks):
            for n, cpu in enumerate(used):
                name = f"n-{z}-{r}-{n}"
                items.append(
                    node(name)
                    .hostname()
                    .labels({"rack": f"rack-{r}", "zone": f"zone-{z}"})
                    .allocatable(cpu="2", pods="110")
                    .obj()
                )
                if cpu:
                    items.append(
                        pod(f"busy-{name}").namespace("ns").requests(cpu=str(cpu)).on(name).obj()
                    )
    return items


def _file(root: tuple[Any, ...]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    count = iter(range(10_000))

    def add(spec: tuple[Any, ...], parent: str | None) -> None:
        key, minimum, below = spec
        name = f"g{next(count)}"
        if below and isinstance(below[0], str):  # a PodGroup: its pods' CPUs
            items.append(gang(name, key, minimum, parent) if minimum else basic(name, key, parent))
            items.extend(
                pod(f"{name}-p{i}").namespace("ns").requests(cpu=cpu).scheduling_group(name).obj()
                for i, cpu in enumerate(below)
            )
            return
        items.append(composite(name, key, minimum or None, parent))
        for child in below:
            add(child, name)

    add(root, None)
    return items


def _group(r: GroupResult) -> tuple[Any, ...]:
    places = [
        (p.domain, p.feasible, p.message, sorted(p.scores.items()), sorted(p.pods.items()))
        for p in r.placements
    ]
    return (
        r.group.name,
        r.ok,
        r.domain,
        r.message,
        r.tie,
        places,
        [_group(c) for c in r.children],
        None if r.again is None else _group(r.again),
    )


def _answer(a: Advice) -> tuple[Any, ...]:
    return (
        [(p.pod.ref, p.node, p.message) for p in a.pods],
        [_group(r) for r in a.results],
    )


@settings(max_examples=150, deadline=None)
@given(zones, roots)
def test_shortcuts_give_the_full_computations_answer(layout, root) -> None:
    cluster = _cluster(layout)
    asked = _file(root)
    snap = snapshot_from_objects({"kind": "List", "items": cluster}, "snapshot")
    objs = collect([(o, "file") for o in asked], [(o, "snapshot") for o in cluster])
    fast = advise(objs, snap.nodes, "file")
    full = advise(objs, snap.nodes, "file", remember=False)
    assert _answer(fast) == _answer(full)
