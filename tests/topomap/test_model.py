"""The map's model and page without a browser: the numbers agree with ``audit`` and
``domains``, and the page is self-contained."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labeler.base.text import natural_key
from labeler.cli import main
from labeler.core.capacity import Node
from labeler.core.model import NodePosition
from labeler.core.profiles import oci_rdma
from labeler.core.scope import Scope
from labeler.core.states import NodeFacts
from labeler.topomap.model import build_map, details_from_nodes, facts_from_nodes
from labeler.topomap.render import render_html

EXAMPLES = Path(__file__).parents[2] / "examples"
SNAPSHOT = str(EXAMPLES / "snapshot-oci.yaml")
TOPOLOGY = oci_rdma().topology
ISLAND, NETWORK, LOCAL = TOPOLOGY.keys


def test_domain_totals_agree_with_domains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One GPU per pod, every taint tolerated: `domains`' pod slots are then the GPUs (the
    # map counts a tainted node's GPUs and shows the taint).
    args = ["--from-snapshot", SNAPSHOT, "--request", "nvidia.com/gpu=1", "--toleration", "*"]
    assert main(["domains", "--profile", "oci-rdma", *args, "-o", "json"]) == 0
    inventory = json.loads(capsys.readouterr().out)
    page = tmp_path / "m.html"
    assert main(["map", "--profile", "oci-rdma", "--from-snapshot", SNAPSHOT, "-o", str(page)]) == 0
    capsys.readouterr()
    assert_self_contained(page.read_text())
    data = _data(page.read_text())
    names = data["levels"]
    seen = 0
    for level in inventory["levels"]:
        for d in level["domains"]:
            row = next(
                r for r in data["domains"] if names[r[1]] == level["name"] and r[0] == d["domain"]
            )
            assert (row[3], row[4], row[5]) == (len(d["nodes"]), d["total"], d["free"])
            seen += 1
    assert seen == len(data["domains"]) == 6


def test_outside_group_and_what_each_node_misses() -> None:
    facts = [
        NodeFacts(NodePosition("a", ("i", "n", "l")), (), (("nvidia.com/gpu", 8),)),
        NodeFacts(NodePosition("b", ("i", "n", None)), (), (("nvidia.com/gpu", 8),)),
        NodeFacts(NodePosition("c", (None, None, None)), (), (("nvidia.com/gpu", 4),)),
    ]
    topo = build_map(TOPOLOGY, facts, profile="oci-rdma", scope="s", origin="test")
    assert [(n.name, n.state, n.missing) for n in topo.outside] == [
        ("b", "partial", ("local_block",)),
        ("c", "unlabeled", ("hpc_island", "network_block", "local_block")),
    ]
    assert [(d.path, d.nodes, d.total, d.free) for d in topo.domains] == [
        (("i",), 1, 8, None),
        (("i", "n"), 1, 8, None),
        (("i", "n", "l"), 1, 8, None),
    ]


def test_names_with_numbers_sort_by_value() -> None:
    """Domains and nodes in numeric order: lb-2 before lb-10, gpu-9 before gpu-10."""
    gpus = (("nvidia.com/gpu", 8),)
    facts = [
        NodeFacts(NodePosition(f"gpu-{i}", ("i", "n", f"lb-{i // 3}")), (), gpus)
        for i in (10, 2, 9, 30, 1)
    ]
    topo = build_map(TOPOLOGY, facts, profile="p", scope="s", origin="t")
    assert [n.name for n in topo.nodes] == ["gpu-1", "gpu-2", "gpu-9", "gpu-10", "gpu-30"]
    assert [d.path[-1] for d in topo.domains if d.level == 2] == ["lb-0", "lb-3", "lb-10"]
    assert natural_key("lb-02") < natural_key("lb-2") < natural_key("lb-10")


def test_partial_nodes_count_in_the_domains_their_labels_name() -> None:
    gpus = (("nvidia.com/gpu", 8),)
    facts = [
        NodeFacts(NodePosition("a", ("i", "n", "l")), (), gpus),
        NodeFacts(NodePosition("b", ("i", "n", None)), (), gpus),  # lacks its local block
        NodeFacts(NodePosition("c", ("i", "m", None)), (), gpus),  # network block m: no domain
        NodeFacts(NodePosition("d", (None, "n", "l")), (), gpus),  # no island: nowhere
    ]
    topo = build_map(TOPOLOGY, facts, profile="p", scope="s", origin="t")
    counts = dict(zip((d.path for d in topo.domains), topo.partial_in_domains(), strict=True))
    assert counts == {("i",): 2, ("i", "n"): 1, ("i", "n", "l"): 0}
    rows = topo.to_json()["domains"]
    assert [r[6] for r in rows] == [2, 1, 0]


def test_scope_free_capacity_and_taints_come_from_the_nodes() -> None:
    labels = {ISLAND: "i", NETWORK: "n", LOCAL: "l"}
    nodes = [
        Node("g1", labels, {"nvidia.com/gpu": 8, "cpu": 64000}, used={"nvidia.com/gpu": 6}),
        Node("g2", labels, {"nvidia.com/gpu": 8}, unschedulable=True),
        Node("cpu", labels, {"cpu": 64000}),  # not an accelerator node: out of scope
    ]
    facts = facts_from_nodes(TOPOLOGY, Scope(), nodes)
    assert [f.name for f in facts] == ["g1", "g2"]
    details = details_from_nodes(nodes, {"g1": ["nvidia.com/gpu"], "g2": ["nvidia.com/gpu"]})
    topo = build_map(TOPOLOGY, facts, profile="p", scope="s", origin="t", details=details)
    assert [(n.name, n.free, n.total, n.taints) for n in topo.nodes] == [
        ("g1", 2, 8, ()),
        ("g2", 8, 8, ("(cordoned)",)),
    ]
    assert topo.domains[-1].free == 10


def test_page_is_self_contained_and_escapes_data() -> None:
    evil = "</script><script src=https://evil.example/x.js></script>"
    facts = [NodeFacts(NodePosition("a", ("i", "n", "l"), {"x": evil}), (), ())]
    page = render_html(build_map(TOPOLOGY, facts, profile="p", scope="s", origin=evil))
    assert page.count("</script>") == 2  # the data block's and the script's own: it cannot
    assert_self_contained(page)
    assert _data(page)["origin"] == evil


def test_map_from_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "c.html"
    code = main(["map", "--profile", "oci-rdma", "--from-csv",
                 str(EXAMPLES / "oci-cluster.csv"), "-o", str(page)])  # fmt: skip
    assert code == 0
    assert "map of 12 node(s) (12 labeled" in capsys.readouterr().out
    data = _data(page.read_text())
    assert {n[4] for n in data["nodes"]} == {-1}  # no pods read: free capacity not known


def test_unwritable_output_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no-such-dir" / "m.html"
    code = main(["map", "--profile", "oci-rdma", "--from-snapshot", SNAPSHOT, "-o", str(out)])
    assert code == 1
    assert f"{out}: cannot write" in capsys.readouterr().err


def assert_self_contained(page: str) -> None:
    """No src/href/url() that would fetch anything (the inert JSON data block aside)."""
    markup = re.sub(
        r"<script type=\"application/json\" id=\"data\">.*?</script>", "", page, flags=re.S
    )
    fetches = re.findall(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", markup, re.I)
    assert fetches == []  # nothing loaded from elsewhere: no script, style, font or image
    assert re.findall(r"@import|url\(|https?://", markup) == []


def _data(page: str) -> dict[str, object]:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert m is not None
    doc: dict[str, object] = json.loads(m.group(1))
    return doc
