"""Slurm topology.conf / topology.yaml: the grammar and limits of topology.conf(5) and
topology.yaml(5), the block plugin's block_sizes rules, stable names, and (where Debian's
slurmctld is installed, always in CI) slurmctld itself loading the generated topology.conf."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import hostlist
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from labeler.core import slinky
from labeler.core.model import Level, NodePosition, Topology
from labeler.core.positions import read_csv
from labeler.core.profiles import oci_rdma
from labeler.emit import slurm
from tests.helpers import ROOT, free_port

OCI = oci_rdma().topology
NVL = Topology(
    "default",
    (
        Level("x/island", "island"),
        Level("x/rack", "rack", block=True),
        Level("x/leaf", "leaf"),
    ),
)
CONF_LINE = re.compile(r"SwitchName=(\S+) (Nodes|Switches)=(\S+)")


def _positions() -> list[NodePosition]:
    return list(read_csv(ROOT / "examples" / "oci-cluster.csv", OCI).positions)


def _nvl_positions(racks_per_island: int, nodes_per_rack: int) -> list[NodePosition]:
    out = []
    for i in range(2):
        for r in range(racks_per_island):
            for n in range(nodes_per_rack):
                out.append(NodePosition(f"n{i}-{r}-{n}", (f"i{i}", f"r{i}{r}", f"l{i}{r}{n // 4}")))
    return out


def parse_conf(text: str) -> dict[str, tuple[str, list[str]]]:
    """switch → (Nodes|Switches, expanded members), checking every line's grammar."""
    out: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        assert len(line) <= slurm.MAX_LINE
        m = CONF_LINE.fullmatch(line)
        assert m, line
        name, kind, members = m.groups()
        assert len(name) <= slinky.MAX_NAME and "." not in name and name not in out
        out[name] = (kind, hostlist.expand_hostlist(members))
    return out


def check_tree(switches: dict[str, tuple[str, list[str]]], nodes: set[str]) -> None:
    """Every node under exactly one leaf switch, every switch but one root a child once."""
    leaves = Counter(n for kind, ms in switches.values() if kind == "Nodes" for n in ms)
    assert set(leaves) == nodes and set(leaves.values()) == {1}
    kids = Counter(s for kind, ms in switches.values() if kind == "Switches" for s in ms)
    assert set(kids) <= set(switches) and set(kids.values()) <= {1}
    assert len(set(switches) - set(kids)) == 1  # one root: jobs may span the whole tree


def check_block_sizes(sizes: list[int], block_node_counts: list[int]) -> None:
    """As the block plugin reads them: base first, each a power-of-two multiple of the base,
    increasing, at most 2**15 base blocks, and no block smaller than the base."""
    base = sizes[0]
    assert base > 0 and min(block_node_counts) >= base
    ks = [(s // base).bit_length() - 1 for s in sizes]
    assert all(s % base == 0 and s // base == 2**k for s, k in zip(sizes, ks, strict=True))
    assert ks == sorted(set(ks)) and ks[-1] <= 15


def test_topology_conf_grammar_and_tree() -> None:
    ps = _positions()
    files = slurm.build(OCI, ps, slinky.topology_names(OCI, "oci-rdma"))
    switches = parse_conf(files.conf)
    check_tree(switches, {p.node for p in ps})
    assert switches["root"][0] == "Switches"
    for name, (_kind, members) in switches.items():
        if name.startswith("local_block-"):
            values = {p.values[2] for p in ps if p.node in members}
            assert values == {name.removeprefix("local_block-")}


def test_topology_yaml_tree_matches_conf_and_has_no_block_without_a_block_level() -> None:
    ps = _positions()
    files = slurm.build(OCI, ps, slinky.topology_names(OCI, "oci-rdma"))
    doc = yaml.safe_load(files.yaml)
    assert len(doc) == 1 and next(iter(doc[0])) == "topology"  # "must be the first attribute"
    topo = doc[0]
    assert topo["topology"] == "oci-rdma" and topo["cluster_default"] is True
    assert {"tree", "block", "flat"} & set(topo) == {"tree"}
    from_yaml = {
        s["switch"]: (
            "Nodes" if "nodes" in s else "Switches",
            hostlist.expand_hostlist(s.get("nodes") or s["children"]),
        )
        for s in topo["tree"]["switches"]
    }
    assert from_yaml == parse_conf(files.conf)


@pytest.mark.parametrize(("racks", "per_rack"), [(4, 18), (3, 8), (1, 5), (2, 2)])
def test_block_topology_for_the_block_level(racks: int, per_rack: int) -> None:
    ps = _nvl_positions(racks, per_rack)
    names = slinky.topology_names(NVL, "gb200")
    doc = yaml.safe_load(slurm.build(NVL, ps, names).yaml)
    assert [d["topology"] for d in doc] == ["gb200", "gb200-block"]
    block = doc[1]
    assert block["cluster_default"] is False and next(iter(block)) == "topology"
    blocks = block["block"]["blocks"]
    members = [hostlist.expand_hostlist(b["nodes"]) for b in blocks]
    assert sorted(n for m in members for n in m) == sorted(p.node for p in ps)
    check_block_sizes(block["block"]["block_sizes"], [len(m) for m in members])
    # Consecutive blocks share an island, so Slurm's aggregates never span two islands.
    islands = [{n.split("-")[0] for n in m} for m in members]
    for size in block["block"]["block_sizes"][1:]:
        span = size // block["block"]["block_sizes"][0]
        for start in range(0, len(islands), span):
            assert len(set().union(*islands[start : start + span])) == 1


def test_block_sizes_rules() -> None:
    assert slurm.block_sizes([[18, 18, 18, 18], [18, 18, 18, 18]]) == [18, 36, 72]
    assert slurm.block_sizes([[18, 18, 18], [18, 18, 18]]) == [18]  # odd groups: base only
    assert slurm.block_sizes([[18, 17, 18, 18, 18]]) == [17, 34, 68, 136]
    assert slurm.block_sizes([[4]]) == [4]
    assert slurm.block_sizes([]) == []
    many = slurm.block_sizes([[1] * 100_000])
    check_block_sizes(many, [1])
    assert len(many) == 16


@given(st.text(min_size=1, max_size=200), st.text(min_size=1, max_size=80))
def test_switch_names_are_short_safe_and_stable(value: str, level_name: str) -> None:
    level = Level("x/k", level_name)
    name = slinky.switch_name(level, value)
    assert len(name) <= slinky.MAX_NAME and re.fullmatch(r"[A-Za-z0-9_-]+", name)
    assert slinky.switch_name(level, value) == name
    assert hostlist.expand_hostlist(name) == [name]


def test_lossy_values_keep_distinct_names() -> None:
    level = Level("x/k", "rack")
    assert slinky.switch_name(level, "a.b") != slinky.switch_name(level, "a_b")
    assert slinky.switch_name(level, "abc") == "rack-abc"


def test_names_do_not_move_when_nodes_are_added() -> None:
    ps = _positions()
    names = slinky.topology_names(OCI, "oci-rdma")
    before = parse_conf(slurm.build(OCI, ps[:6], names).conf)
    after = parse_conf(slurm.build(OCI, ps, names).conf)
    assert set(before) - {"root"} <= set(after)
    for name, (_kind, members) in before.items():
        if name.startswith("local_block-"):
            assert set(members) <= set(after[name][1])


def test_node_spec_matches_the_files() -> None:
    ps = _nvl_positions(2, 4)
    names = slinky.topology_names(NVL, "gb200")
    doc = yaml.safe_load(slurm.build(NVL, ps, names).yaml)
    leaf_of = {
        n: s["switch"]
        for s in doc[0]["tree"]["switches"]
        if "nodes" in s
        for n in hostlist.expand_hostlist(s["nodes"])
    }
    block_of = {
        n: b["block"]
        for b in doc[1]["block"]["blocks"]
        for n in hostlist.expand_hostlist(b["nodes"])
    }
    for p in ps:
        spec = slinky.node_spec(NVL, p.values, names)
        assert spec == f"gb200:{leaf_of[p.node]},gb200-block:{block_of[p.node]}"
    assert slinky.node_spec(NVL, ("i", "r", None), names) is None
    assert slinky.node_spec(NVL, ("i", None, "l"), names) is None


def test_bad_node_names_and_long_lines_are_errors() -> None:
    from labeler.base.errors import InputError

    with pytest.raises(InputError, match="Slurm node names"):
        slurm.build(OCI, [NodePosition("a,b", ("1", "2", "3"))], slinky.topology_names(OCI, "x"))
    many = [NodePosition(f"host{i:05d}x{i}", ("1", "2", "3")) for i in range(400)]
    with pytest.raises(InputError, match=r"topology\.yaml"):
        slurm.build(OCI, many, slinky.topology_names(OCI, "x"))


def test_nodes_without_the_narrowest_value_are_left_out(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)  # an earlier CLI test may have raised the root level
    ps = [NodePosition("a", ("1", "2", "3")), NodePosition("b", ("1", "2", None))]
    switches = parse_conf(slurm.build(OCI, ps, slinky.topology_names(OCI, "x")).conf)
    check_tree(switches, {"a"})
    assert "left out" in caplog.text


SLURMCTLD = shutil.which("slurmctld")


@pytest.mark.skipif(
    SLURMCTLD is None and not os.environ.get("CI"),
    reason="slurmctld not installed (apt-get install slurmctld; .ci/run installs it)",
)
def test_slurmctld_loads_the_generated_topology_conf(tmp_path: Path) -> None:
    """slurmctld 22.05+ in the foreground on loopback ports, nodes addressed at 127.0.0.1;
    it is stopped as soon as it has logged the switch table it built from our file."""
    assert SLURMCTLD is not None, "CI must install slurmctld"
    ps = _positions()
    conf = slurm.build(OCI, ps, slinky.topology_names(OCI, "oci-rdma")).conf
    ours = parse_conf(conf)
    (tmp_path / "topology.conf").write_text(conf)
    (tmp_path / "state").mkdir()
    nodes = "\n".join(f"NodeName={p.node} NodeAddr=127.0.0.1 CPUs=1" for p in ps)
    (tmp_path / "slurm.conf").write_text(
        f"""ClusterName=check
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
StateSaveLocation={tmp_path}/state
SlurmctldPidFile={tmp_path}/slurmctld.pid
SlurmctldLogFile={tmp_path}/slurmctld.log
MailProg=/bin/true
TopologyPlugin=topology/tree
SelectType=select/cons_tres
{nodes}
PartitionName=all Nodes=ALL Default=YES
"""
    )
    proc = subprocess.Popen(
        [SLURMCTLD, "-D", "-c", "-vv", "-f", str(tmp_path / "slurm.conf")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: dict[str, str] = {}
    log: list[str] = []
    try:
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line)
            m = re.search(r"Switch level:(\d+) name:(\S+) nodes:(\S+)", line)
            if m:
                seen[m.group(2)] = m.group(3)
            if "switches_dist" in line or "fatal" in line or time.monotonic() > deadline:
                break
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert set(seen) == set(ours), "".join(log[-30:])
    # slurmctld's own node set per switch equals ours (leaf nodes, or all below a switch)
    for name, (kind, _members) in ours.items():
        if kind == "Nodes":
            assert sorted(hostlist.expand_hostlist(seen[name])) == sorted(ours[name][1])
    assert sorted(hostlist.expand_hostlist(seen["root"])) == sorted(p.node for p in ps)


def test_profile_marks_one_block_level() -> None:
    from labeler.base.errors import InputError
    from labeler.core.profiles import parse_profile

    levels = [{"key": "x/rack", "name": "rack", "block": True}, {"key": "x/leaf"}]
    p = parse_profile({"name": "p", "levels": levels}, origin="p.yaml")
    assert p.topology.block_level is not None and p.topology.block_level.name == "rack"
    with pytest.raises(InputError, match="only one level"):
        both = [{**lv, "block": True} for lv in levels]
        parse_profile({"name": "p", "levels": both}, origin="p.yaml")
    with pytest.raises(InputError, match="block must be true or false"):
        parse_profile({"name": "p", "levels": [{"key": "x/a", "block": "yes"}]}, origin="p")
