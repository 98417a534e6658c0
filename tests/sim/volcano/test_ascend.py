"""ascend-for-volcano's multi-level rules: affinity-config sizes inside the
resource-level-config tree, whole-node NPU pods, reservedNode."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from labeler.sim.volcano.ascend import TreeLevels, select_nodes, task_levels
from labeler.sim.volcano.conf import parse_conf
from tests.builders import node
from tests.sim.volcano.objects import member, podgroup, queue, simulate

NPU = "huawei.com/Ascend910"
RACK, SPINE = "example.com/rack", "example.com/spine"


def conf(levels: dict[str, Any], *, npu_plugin: bool = True) -> Any:
    init = json.dumps({"default": levels})
    plugin = "  - name: volcano-npu_v7.0.0_linux-x86_64\n" if npu_plugin else ""
    return parse_conf(
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
        + plugin
        + "configurations:\n- name: init-params\n  arguments:\n"
        + f"    resource-level-config: '{init}'\n",
        "test",
    )


TWO_LEVELS = conf({"level1": {"label": RACK}, "level2": {"label": SPINE}})


def npu_nodes(spines: int, racks: int, per_rack: int, npus: str = "8") -> list[dict[str, Any]]:
    out = []
    for s in range(spines):
        for r in range(racks):
            for n in range(per_rack):
                labels = {SPINE: f"sp{s}", RACK: f"sp{s}-r{r}"}
                out.append(
                    node(f"n{s}{r}{n}")
                    .labels(labels)
                    .allocatable(cpu="64", memory="256Gi", pods="10")
                    .allocatable({NPU: npus})
                    .capacity()
                    .obj()
                )
    return out


def npu_job(pods: int, affinity: str) -> list[dict[str, Any]]:
    pg = podgroup(pods)
    pg["metadata"]["annotations"] = {
        "huawei.com/schedule_policy": "multilevel",
        "huawei.com/affinity-config": affinity,
    }
    return [pg, queue()] + [
        member(f"w-{i}", "worker", cpu="1", memory="1Gi").requests({NPU: "8"}).obj()
        for i in range(pods)
    ]


def rack_and_spine(verdict: Any) -> tuple[Counter[str], set[str]]:
    racks: Counter[str] = Counter(p.node[:3] for p in verdict.binds)
    return racks, {p.node[:2] for p in verdict.binds}


def test_groups_land_inside_their_level_domains() -> None:
    """level1=2, level2=4: four pods in one spine, two per rack."""
    verdict = simulate([*npu_job(4, "level1=2,level2=4"), *npu_nodes(2, 2, 3)], TWO_LEVELS)
    racks, spines = rack_and_spine(verdict)
    assert len(verdict.binds) == 4 and len(spines) == 1 and sorted(racks.values()) == [2, 2]


def test_nodes_whose_free_npus_differ_from_the_pod_are_no_candidates() -> None:
    items = [*npu_job(2, "level1=2"), *npu_nodes(1, 1, 2, npus="16")]
    verdict = simulate(items, TWO_LEVELS)
    assert verdict.binds == []
    assert "node usable npu not match task npu num" in verdict.message


def test_an_affinity_config_ascend_for_volcano_refuses() -> None:
    verdict = simulate([*npu_job(4, "level1=3"), *npu_nodes(1, 2, 4)], TWO_LEVELS)
    assert verdict.binds == []
    assert verdict.why == [
        "ascend-for-volcano: block config is invalid: affinity block level1's value 3 can not "
        "be divided by upper level's value 4"
    ]
    assert (
        "not exist" in simulate([*npu_job(4, "level2=4"), *npu_nodes(1, 2, 4)], TWO_LEVELS).why[0]
    )


def test_without_the_npu_plugin_the_annotations_do_nothing() -> None:
    plain = conf({"level1": {"label": RACK}}, npu_plugin=False)
    verdict = simulate([*npu_job(4, "level1=3"), *npu_nodes(1, 2, 4)], plain)
    assert len(verdict.binds) == 4 and verdict.why == []


def test_reserved_nodes_are_kept_out_of_the_first_pass_only() -> None:
    reserve = conf({"level1": {"label": RACK, "reservedNode": 1}, "level2": {"label": SPINE}})
    nodes = npu_nodes(1, 2, 4)
    three = simulate([*npu_job(3, "level1=3"), *nodes], reserve)
    # each rack keeps one node (here its first by name) for later: n000 is left free
    assert sorted(p.node for p in three.binds) == ["n001", "n002", "n003"]
    unreserved = simulate([*npu_job(3, "level1=3"), *nodes], TWO_LEVELS)
    assert sorted(p.node for p in unreserved.binds) == ["n000", "n001", "n002"]
    four = simulate([*npu_job(4, "level1=4"), *nodes], reserve)  # needs a reserved node
    assert len(four.binds) == 4 and len({p.node[:3] for p in four.binds}) == 1


def test_the_selection_itself() -> None:
    """Level sizes from the job down; with level1 only, all groups first in one level2."""
    assert task_levels({"level1": 2, "level2": 4}, 8) == [8, 4, 2, 1]
    levels = {"default": TreeLevels((SPINE, RACK))}
    from labeler.core.capacity import Node

    nodes = [Node(f"n{s}{r}{i}", labels={SPINE: f"s{s}", RACK: f"s{s}r{r}"})
             for s in range(2) for r in range(2) for i in range(2)]  # fmt: skip
    got = select_nodes(nodes, levels, [4, 2, 1])
    assert not isinstance(got, str)
    chosen, tree = got
    assert tree == "default" and len(chosen) == 4 and len({n[:2] for n in chosen}) == 1
