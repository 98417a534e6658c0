"""The hot-swap view: per admitted Workload and node, could Kueue replace it now?

Its fast path (free slots summed per domain) must say what the full replacement search of
``advise --failed-node`` says, node by node: checked on the example snapshot and on random
clusters with random admitted Workloads (required, preferred, unconstrained, with and
without slices).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from labeler.core.hotswap import SwapState
from labeler.sim.common.cluster import snapshot_from_objects
from labeler.sim.common.inputs import read_snapshot
from labeler.sim.kueue.admitted import what_if
from labeler.sim.kueue.gates import FAIL_FAST, Gates, Timing
from labeler.sim.kueue.hotswap import hot_swap
from tests.builders import node
from tests.sim.kueue.objects import as_list
from tests.sim.kueue.test_failure import HOST, admitted, kueue_objects, podset

ROOT = Path(__file__).resolve().parents[3]
BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"


def test_the_example_train_b_has_no_spare_node_in_its_local_block() -> None:
    snap = read_snapshot(str(ROOT / "examples" / "snapshot-oci.yaml"))
    view = hot_swap(snap.nodes, snap.kueue)
    states = {w.key: w.state for w in view.workloads}
    assert states == {
        "team-a/infer-7f3a": SwapState.REPLACEABLE,
        "team-b/train-b": SwapState.NOT_REPLACEABLE,
    }
    assert view.by_cluster_queue() == {
        "gpu": {SwapState.REPLACEABLE: 1, SwapState.NOT_REPLACEABLE: 1, SwapState.EXEMPT: 0}
    }
    assert view.risky_nodes() == {"gpu-11": ("team-b/train-b",), "gpu-12": ("team-b/train-b",)}
    (train,) = view.at_risk
    assert {n.domain for n in train.nodes} == {("island-a", "nb-2", "lb-3")}
    assert {n.spare for n in train.nodes} == {0}


def random_cluster(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes in 2 blocks × 2 racks × 3 hosts with random CPUs, and 2–7 admitted Workloads
    (their assignments may overcommit a node: both sides count the same)."""
    nodes, hosts = [], []
    for b in ("b1", "b2"):
        for r in ("r1", "r2"):
            for h in range(3):
                name = f"{b}{r}x{h}"
                hosts.append(name)
                obj = (
                    node(name)
                    .hostname()
                    .labels({"tas-node": "true", BLOCK: b, RACK: f"{b}-{r}"})
                    .allocatable({"cpu": str(rng.randint(1, 3)), "pods": "10"})
                    .obj()
                )
                if rng.random() < 0.05:
                    obj["status"]["conditions"][0]["status"] = "False"
                nodes.append(obj)
    workloads = []
    for i in range(rng.randint(2, 7)):
        mode = rng.choice(["required", "preferred", "unconstrained"])
        level = rng.choice([BLOCK, RACK])
        spread = rng.sample(hosts, rng.randint(1, 4))
        counts = {h: rng.randint(1, 2) for h in spread}
        total = sum(counts.values())
        kw: dict[str, Any] = {}
        if mode != "unconstrained":
            kw[mode] = level
        layers = rng.random()
        if layers < 0.3 and total % 2 == 0:
            kw.update(slice_size=2, slice_level=RACK if level == BLOCK else HOST)
        ps = podset("one", total, {"cpu": rng.choice(["500m", "1", "2"])}, **kw)
        if mode == "unconstrained":
            ps["topologyRequest"] = {"unconstrained": True}
        elif 0.3 <= layers < 0.5 and total % 4 == 0 and level == BLOCK:
            ps["topologyRequest"]["podsetSliceRequiredTopologyConstraints"] = [
                {"topology": RACK, "size": 4},
                {"topology": HOST, "size": 2},
            ]
        workloads.append(admitted([ps], {"one": counts}, name=f"w{i}"))
    return nodes, workloads


@pytest.mark.parametrize("seed", range(200))
def test_the_fast_view_agrees_with_the_full_search_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    nodes, workloads = random_cluster(rng)
    gates = Gates({FAIL_FAST: rng.random() < 0.8})
    snap = snapshot_from_objects(as_list([*nodes, *kueue_objects(), *workloads]), "test")
    view = hot_swap(snap.nodes, snap.kueue, gates)
    assert not view.problems
    by_key = {w.key: w for w in view.workloads}
    for obj in workloads:
        spare = by_key[f"default/{obj['metadata']['name']}"]
        for n in spare.nodes:
            answer = what_if(snap, obj, [n.node], gates, timing=Timing.TOGETHER)
            assert n.replaceable == answer.fits, (seed, spare.key, n, answer.message)
