"""The audit's pure parts: scope, facts, states, unusable accelerators, the incremental store,
label selectors and the job placement view."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from labeler.audit.jobview import job_placement
from labeler.audit.render import render_table
from labeler.audit.serve import audit_figures
from labeler.audit.store import NodeStore
from labeler.base.errors import UsageError
from labeler.core.node import OWNED_ANNOTATION, NodeInfo
from labeler.core.positions import select
from labeler.core.profiles import ascend_superpod, oci_rdma
from labeler.core.quantity import parse_count
from labeler.core.scope import Scope
from labeler.core.selector import parse_selector
from labeler.core.states import build_report, node_facts
from tests.builders import node, pod

PROFILE = oci_rdma()
TOPO = PROFILE.topology
ISLAND, NETWORK, LOCAL = TOPO.keys
OWNED = {OWNED_ANNOTATION: ",".join(TOPO.keys)}


def full(i: str, n: str, lo: str) -> dict[str, str]:
    return {ISLAND: i, NETWORK: n, LOCAL: lo}


def gpu_node(name: str, labels: dict[str, str] | None = None, *, gpus: int = 8) -> NodeInfo:
    """A node the labeler owns the topology labels of: 64 CPUs, ``gpus`` GPUs, ``labels``."""
    return node(name).labels(labels).annotations(OWNED).allocatable(cpu="64").gpus(gpus).info()


def mixed_cluster() -> list[NodeInfo]:
    return [
        gpu_node("a1", full("i1", "n1", "l1")),
        gpu_node("a2", full("i1", "n1", "l1")),
        gpu_node("b1", {ISLAND: "i1", NETWORK: "n1"}, gpus=4),  # partial: no local block
        gpu_node("c1"),  # unlabeled
        gpu_node("c2", {"other": "x"}, gpus=2),  # unlabeled
        gpu_node("d1", full("i1", "n2", "l9")),  # l9 under n2 and n3: inconsistent
        node("d2")
        .labels(full("i1", "n3", "l9"))
        .allocatable(cpu="64")
        .gpus(8)
        .info(),  # also foreign
        node("cpu").annotations(OWNED).allocatable({"cpu": "16"}).info(),  # out of scope
    ]


def report_of(nodes: list[NodeInfo], scope: Scope | None = None) -> Any:
    scope = scope or Scope()
    facts = [f for n in nodes if (f := node_facts(TOPO, scope, n)) is not None]
    return build_report(PROFILE.name, scope.describe(), TOPO, facts)


def test_mixed_cluster_states_sum_to_nodes_in_scope() -> None:
    r = report_of(mixed_cluster())
    assert r.nodes == 7
    assert r.counts() == {"labeled": 2, "partial": 1, "unlabeled": 2, "inconsistent": 2}
    assert sum(r.counts().values()) == r.nodes
    assert r.states["unlabeled"] == ("c1", "c2")
    assert r.missing == {"b1": ("local_block",)}
    assert r.foreign == {"d2": TOPO.keys}
    # Only partial + unlabeled nodes count as capacity Kueue cannot see.
    assert r.unusable_accelerators == {"nvidia.com/gpu": 4 + 8 + 2}
    assert r.accelerators == {"nvidia.com/gpu": 8 * 5 + 4 + 2}
    assert not r.ok
    [v] = r.nesting
    assert (v.level.name, v.value, v.parents, v.nodes) == (
        "local_block",
        "l9",
        ("n2", "n3"),
        ("d1", "d2"),
    )


def test_a_placeholder_value_is_a_missing_label_not_a_domain() -> None:
    # oci-hpc-oke writes "no-imds-data" when IMDS has no answer; Kueue would put every such
    # node into one shared domain, so audit, check and generate treat it as no label
    nodes = [
        gpu_node("a1", full("i1", "n1", "l1")),
        node("p1").labels(full("i1", "n1", "no-imds-data")).allocatable(cpu="64").gpus(8).info(),
        node("p2")
        .labels(full("no-imds-data", "no-imds-data", "no-imds-data"))
        .allocatable(cpu="64")
        .gpus(8)
        .info(),
    ]
    r = report_of(nodes)
    assert r.counts() == {"labeled": 1, "partial": 1, "unlabeled": 1, "inconsistent": 0}
    assert r.missing == {"p1": ("local_block",)}
    assert r.unusable_accelerators == {"nvidia.com/gpu": 16}
    # the same judgement from a CSV or the cluster's labels (positions), as check reads them
    ps = select(TOPO, "t", [(n.name, n.labels) for n in nodes])
    assert [p.values for p in ps.positions][1:] == [("i1", "n1", None), (None, None, None)]


def test_figures_have_every_state_and_level_even_when_zero() -> None:
    r = report_of([gpu_node("a1", full("i1", "n1", "l1"))])
    fig = audit_figures(r, 123.0)
    assert fig.states == {"labeled": 1, "partial": 0, "unlabeled": 0, "inconsistent": 0}
    assert fig.unlabeled_accelerators == {"nvidia.com/gpu": 0}
    assert fig.nesting_violations == {"hpc_island": 0, "network_block": 0, "local_block": 0}
    assert fig.domains == {"hpc_island": 1, "network_block": 1, "local_block": 1}
    assert r.ok and fig.last_sync == 123.0


def test_default_scope_matches_ascend_resources_and_parses_quantities() -> None:
    n = (
        node("npu")
        .annotations(OWNED)
        .allocatable({"huawei.com/Ascend910": "16", "huawei.com/Ascend310P": "0"})
        .info()
    )
    f = node_facts(TOPO, Scope(), n)
    assert f is not None and f.accelerators == (("huawei.com/Ascend910", 16),)
    assert (
        node_facts(
            TOPO, Scope(), node("x").annotations(OWNED).allocatable({"amd.com/gpu": "8"}).info()
        )
        is None
    )
    scoped = Scope(resources=("amd.com/gpu",))
    assert (
        node_facts(
            TOPO, scoped, node("x").annotations(OWNED).allocatable({"amd.com/gpu": "8"}).info()
        )
        is not None
    )
    assert parse_count("2k") == 2000 and parse_count("1Ki") == 1024 and parse_count("x") is None


def test_selector_scope_includes_nodes_without_accelerators() -> None:
    scope = Scope(selector=parse_selector("pool=gpu"))
    nodes = [
        node("s1").labels({"pool": "gpu"}).annotations(OWNED).allocatable({}).info(),
        gpu_node("s2", {"pool": "cpu"}),
    ]
    r = report_of(nodes, scope)
    assert r.states["unlabeled"] == ("s1",)
    assert r.scope == "nodes matching pool=gpu"


def test_ascend_tree_label_is_not_a_level_but_counts_as_foreign_and_empty() -> None:
    prof = ascend_superpod()
    topo = prof.topology
    n = NodeInfo(
        name="n",
        labels={
            "huawei.com/topotree": "",
            "huawei.com/topotree.groupid": "0",
            "huawei.com/topotree.superpodid": "1",
        },
        allocatable={"huawei.com/Ascend910": "16"},
    )
    f = node_facts(topo, Scope(), n)
    assert f is not None
    r = build_report(prof.name, "x", topo, [f])
    assert r.counts()["labeled"] == 1
    assert r.check.empty_tree_label == ("n",)
    assert set(r.foreign["n"]) == {"huawei.com/topotree", *topo.keys}


def test_table_names_partial_levels_unusable_gpus_and_violations() -> None:
    text = render_table(report_of(mixed_cluster()))
    assert "b1  local_block" in text
    assert "nvidia.com/gpu" in text and "14" in text
    assert "local_block 'l9' sits under 2 network_blocks (n2, n3): d1, d2" in text
    assert "Unlabeled nodes: c1, c2" in text
    assert "verdict: 5 of 7 node(s) in scope are not fully labeled" in text


def test_json_lists_every_node_and_domain() -> None:
    doc = report_of(mixed_cluster()).to_json()
    assert doc["counts"]["inconsistent"] == 2
    assert doc["nodes"]["partial"] == ["b1"]
    assert doc["unlabeledAccelerators"] == {"nvidia.com/gpu": 14}
    local = next(lv for lv in doc["levels"] if lv["name"] == "local_block")
    assert local["domains"] == {"l1": 2, "l9": 2}


def test_store_ignores_heartbeats_and_tracks_scope_changes() -> None:
    store = NodeStore(TOPO, Scope())
    store.replace(mixed_cluster())
    gen, facts = store.snapshot()
    assert len(facts) == 7
    store.changed.clear()
    # A status-only update (same labels, same allocatable) changes nothing.
    assert not store.apply(
        "MODIFIED",
        gpu_node("a1", full("i1", "n1", "l1")),
    )
    assert not store.changed.is_set() and store.snapshot()[0] == gen
    # A label removal does.
    assert store.apply(
        "MODIFIED",
        gpu_node("a1", {ISLAND: "i1"}),
    )
    assert store.changed.is_set()
    # A node losing its GPUs leaves the scope; a CPU node gaining some enters it.
    assert store.apply("MODIFIED", node("c2").annotations(OWNED).allocatable({"cpu": "8"}).info())
    assert store.apply("MODIFIED", gpu_node("cpu"))
    assert store.apply("DELETED", gpu_node("d2"))
    assert not store.apply("DELETED", gpu_node("never-seen"))
    assert not store.apply(
        "BOOKMARK", node("").annotations(OWNED).allocatable(cpu="64").gpus(8).info()
    )
    _, facts = store.snapshot()
    assert sorted(f.name for f in facts) == ["a1", "a2", "b1", "c1", "cpu", "d1"]


@pytest.mark.parametrize(
    ("text", "labels", "want"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("a in (x, y),b", {"a": "y", "b": "1"}, True),
        ("a notin (x,y)", {"a": "x"}, False),
        ("a notin (x,y)", {}, True),
        ("a=b,c=d", {"a": "b"}, False),
    ],
)
def test_selector_matches_like_the_api_server(
    text: str, labels: dict[str, str], want: bool
) -> None:
    assert parse_selector(text).matches(labels) is want


@pytest.mark.parametrize("text", ["", "a=b,", "bad key!=x", "a=in valid"])
def test_selector_errors_name_the_clause(text: str) -> None:
    with pytest.raises(UsageError, match=r"selector|empty"):
        parse_selector(text)


NODES = {
    "a1": full("i1", "n1", "l1"),
    "a2": full("i1", "n1", "l1"),
    "a3": full("i1", "n1", "l2"),
    "b1": full("i1", "n2", "l3"),
    "x": {ISLAND: "i1"},
}


def ml_pod(name: str, node: str | None, phase: str = "Running") -> dict[str, Any]:
    """A pod of the job in namespace ml, on ``node`` (None: not scheduled), in ``phase``."""
    return pod(name).namespace("ml").on(node).phase(phase).obj()


def test_placement_all_in_one_local_block() -> None:
    view = job_placement(
        TOPO,
        [
            ml_pod("p0", "a1"),
            ml_pod("p1", "a2"),
            ml_pod("p2", None, "Pending"),
        ],
        NODES,
    )
    assert view.verdict() == (
        "all 2 pod(s) on 2 node(s) in 1 local_block; 1 pod(s) pending (not scheduled)"
    )
    assert view.pods[-1].pending


def test_placement_split_names_each_level_and_the_tightest() -> None:
    pods = [
        ml_pod("p0", "a1"),
        ml_pod("p1", "a3"),
        ml_pod("p2", "b1"),
        ml_pod("p3", "b1"),
    ]
    view = job_placement(TOPO, pods, NODES)
    assert view.verdict() == (
        "4 pod(s) on 3 node(s) split across 3 local_blocks, 2 network_blocks; all in 1 hpc_island"
    )
    spread = {s.level.name: dict(s.domains) for s in view.spread()}
    assert spread["local_block"] == {"l1": 1, "l2": 1, "l3": 2}


def test_placement_reports_unlabeled_and_vanished_nodes_and_ignores_finished() -> None:
    pods = [
        ml_pod("p0", "a1"),
        ml_pod("p1", "x"),
        ml_pod("p2", "gone"),
        ml_pod("old", "b1", "Succeeded"),
    ]
    view = job_placement(TOPO, pods, NODES)
    v = view.verdict()
    assert "3 pod(s) on 3 node(s) split across" in v
    assert "2 pod(s) on nodes without local_block" in v
    assert "1 finished pod(s) not counted" in v
    assert "1 node(s) no longer exist" in v
    assert job_placement(TOPO, [], NODES).verdict() == "no pod matches"


def test_an_empty_scope_says_nothing_was_audited() -> None:
    text = render_table(
        report_of([node("cpu").annotations(OWNED).allocatable({"cpu": "64"}).info()])
    )
    assert "verdict: no node in scope; nothing was audited" in text
    assert "usable" not in text.splitlines()[-1]


def test_the_pure_report_does_not_import_the_prometheus_client() -> None:
    code = (
        "import sys, labeler.core.states, labeler.audit.render; "
        "sys.exit('prometheus_client' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
