"""What Volcano and ascend-for-volcano make of our output, rule by rule.

Each test states the consumer's rule it encodes (read in the consumer's code):
- Volcano label discovery (pkg/controllers/hypernode/discovery/label/label.go): 1.12 is a
  stub that panics; 1.13 sets no tierName; 1.14 sets tierName to the label key; it makes one
  HyperNode per (label, value) across all nodes, whatever their tree.
- The scheduler resolves ``highestTierName`` through the HyperNodes' tierNames and skips a
  name it cannot find (the job then runs unbounded).
- The controller reads ``interval`` into a Go ``time.Duration`` (``time.ParseDuration``).
- ascend-for-volcano json.Unmarshals resource-level-config (reservedNode an integer), reads
  the tree from huawei.com/topotree only, and checks huawei.com/affinity-config.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from labeler.base.errors import InputError
from labeler.cli import main
from labeler.core.model import NodePosition
from labeler.core.profiles import (
    ASCEND_GROUP,
    ASCEND_SUPERPOD,
    ASCEND_TREE_LABEL,
    ascend_superpod,
    oci_rdma,
    parse_profile,
)
from labeler.emit import hypernodes
from labeler.emit.configmap import merge_resource_level_config
from labeler.sim.kueue.advice import ascend_annotations, make_job, volcano_network_topology
from labeler.sim.kueue.assign import Mode
from labeler.sim.kueue.multilevel import affinity_problems

GOLDEN = Path(__file__).parent.parent / "golden" / "inputs"
HEADER = f"nodeName,{ASCEND_TREE_LABEL},{ASCEND_GROUP},{ASCEND_SUPERPOD}\n"


def _csv(tmp_path: Path, rows: list[str]) -> str:
    p = tmp_path / "nodes.csv"
    p.write_text(HEADER + "".join(r + "\n" for r in rows))
    return str(p)


TWO_TREES = ["a1,t1,0,0", "a2,t1,0,1", "b1,t2,0,2", "b2,t2,1,3"]


def test_check_names_values_shared_across_trees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _csv(tmp_path, TWO_TREES)
    args = ["check", "--profile", "ascend-superpod", "--topotree-name", "t1", "--from-csv", path]
    assert main(args) == 3
    out = capsys.readouterr().out
    assert f"{ASCEND_GROUP}=0 is used by tree 't1' (nodes a1, a2) and tree 't2' (nodes b1)" in out
    fixed = _csv(tmp_path, ["a1,t1,0,0", "a2,t1,0,1", "b1,t2,5,2", "b2,t2,6,3"])
    assert main([*args[:-1], fixed]) == 0


def test_generate_refuses_discovery_that_would_merge_trees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _csv(tmp_path, TWO_TREES)
    base = ["generate", "--profile", "ascend-superpod", "--topotree-name", "t1"]
    base += ["--from-csv", path, "--force", "-o", "-"]
    assert main([*base, "--emit", "discovery"]) == 1
    assert "label discovery would merge trees" in capsys.readouterr().err
    assert main(base) == 0  # everything else is still written, with a note
    captured = capsys.readouterr()
    assert "note: no discovery output: label discovery would merge trees" in captured.err
    assert "networkTopologyDiscovery" not in captured.out


def test_label_members_also_select_the_tree() -> None:
    topo = ascend_superpod("t1").topology
    docs = hypernodes.build_hypernodes(
        topo,
        [NodePosition("a", ("0", "7"))],
        hypernodes.HyperNodeOptions(node_members=hypernodes.NodeMembers.LABELS),
    )
    tier1 = docs[0]
    assert tier1["spec"]["members"][0]["selector"]["labelMatch"]["matchLabels"] == {
        ASCEND_SUPERPOD: "7",
        ASCEND_TREE_LABEL: "t1",
    }
    # the default tree's nodes may lack the tree label: matched by the value alone
    default = hypernodes.build_hypernodes(
        ascend_superpod().topology,
        [NodePosition("a", ("0", "7"))],
        hypernodes.HyperNodeOptions(node_members=hypernodes.NodeMembers.LABELS),
    )
    assert default[0]["spec"]["members"][0]["selector"]["labelMatch"]["matchLabels"] == {
        ASCEND_SUPERPOD: "7"
    }


def test_one_tier_name_on_static_and_discovered_hypernodes() -> None:
    topo = oci_rdma().topology
    static_names = {
        d["spec"]["tierName"]
        for d in hypernodes.build_hypernodes(topo, [NodePosition("n", ("i", "b", "l"))])
    }
    assert static_names == set(topo.keys)  # what 1.14 discovery sets: the label key
    job = make_job(topo, 2, mode=Mode.REQUIRED, level="network_block")
    stanza = volcano_network_topology(topo, Mode.REQUIRED, 1)
    assert stanza == {"networkTopology": {"mode": "hard", "highestTierName": topo.keys[1]}}
    assert job.level == 1


def test_advise_uses_tier_numbers_where_a_name_would_not_resolve(
    capsys: pytest.CaptureFixture[str],
) -> None:
    snap = str(Path(__file__).parent.parent.parent / "examples" / "snapshot-oci.yaml")
    base = ["advise", "--profile", "oci-rdma", "--from-snapshot", snap]
    base += ["--request", "nvidia.com/gpu=8", "--pods", "2", "--required", "network_block"]
    main(base)
    assert "highestTierName: oci.oraclecloud.com/rdma.network_block_id" in capsys.readouterr().out
    main([*base, "--volcano-version", "1.13"])  # discovered HyperNodes carry no tierName
    out = capsys.readouterr().out
    assert "highestTierAllowed: 2" in out and "highestTierName" not in out


def test_custom_tier_name_falls_back_to_the_number() -> None:
    profile = parse_profile(
        {
            "name": "x",
            "levels": [{"key": "example.com/a"}, {"key": "example.com/b", "tierName": "leaf"}],
        },
        origin="p",
    )
    stanza = volcano_network_topology(profile.topology, Mode.REQUIRED, 1, legacy=False)
    assert stanza is not None and stanza["networkTopology"]["highestTierName"] == "leaf"
    from labeler.sim.kueue.advice import tier_name_works

    assert not tier_name_works(profile.topology, 1, (1, 14))  # discovery would say example.com/b
    assert tier_name_works(profile.topology, 0, (1, 14))
    assert not tier_name_works(profile.topology, 0, (1, 13))


def test_no_discovery_for_volcano_1_12(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["generate", "--profile", "oci-rdma", "--volcano-version", "1.12", "-o", "-"]
    assert main([*base, "--emit", "discovery"]) == 1
    assert "stub that panics" in capsys.readouterr().err
    assert main(base) == 0
    captured = capsys.readouterr()
    assert "networkTopologyDiscovery" not in captured.out and "stub that panics" in captured.err
    newer = ["generate", "--profile", "oci-rdma", "--volcano-version", "1.13", "-o", "-"]
    assert main([*newer, "--emit", "discovery"]) == 0


@pytest.mark.parametrize("bad", ["1d", "3600", "", "1h 30m", "-5m", "0", ".s", "5sec"])
def test_discovery_interval_is_a_go_duration(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["generate", "--profile", "oci-rdma", "--emit", "discovery", "-o", "-"]
    assert main([*args, f"--discovery-interval={bad}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--discovery-interval" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("good", ["90s", "30m", "1h", "1h30m", "1.5h", ".5h", "500ms", "2µs"])
def test_go_durations_are_accepted(good: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["generate", "--profile", "oci-rdma", "--emit", "discovery", "-o", "-"]
    assert main([*args, "--discovery-interval", good]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["networkTopologyDiscovery"][0]["interval"] == good


def test_reserved_node_true_is_refused() -> None:
    doc = {
        "name": "x",
        "treeLabel": ASCEND_TREE_LABEL,
        "levels": [{"key": "example.com/a"}, {"key": "example.com/b", "reservedNode": True}],
    }
    with pytest.raises(InputError) as e:
        parse_profile(doc, origin="p.yaml")
    assert "reservedNode must be a whole number ≥ 0, got True" in str(e.value)


def test_a_tree_label_ascend_does_not_read_gets_no_init_params(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "p.yaml"
    p.write_text("name: x\ntreeLabel: example.com/tree\nlevels:\n  - {key: example.com/a}\n")
    base = ["generate", "--profile", str(p), "-o", "-"]
    assert main([*base, "--emit", "volcano"]) == 1
    assert "reads the tree only from huawei.com/topotree" in capsys.readouterr().err
    assert main(base) == 0
    assert "resource-level-config" not in capsys.readouterr().out


SCHEDULER_CM = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-scheduler-configmap}
data:
  volcano-scheduler.conf: |
    actions: "allocate"
    tiers:
    - plugins:
      - name: gang
    - plugins:
      - name: predicates
    configurations:
    - name: init-params
      arguments:
        resource-level-config: '{"default": {"level1": {"label": "x", "reservedNode": 3}}}'
"""


def _conf(text: str) -> dict[str, object]:
    cm = yaml.safe_load(text)
    return yaml.safe_load(cm["data"]["volcano-scheduler.conf"])  # type: ignore[no-any-return]


def test_merge_keeps_reserved_node_adds_topology_plugin_and_warns_without_ascend() -> None:
    topo = ascend_superpod().topology
    r = merge_resource_level_config(SCHEDULER_CM, topo, origin="cm", network_topology=True)
    conf = _conf(r.text)
    rlc = json.loads(conf["configurations"][0]["arguments"]["resource-level-config"])  # type: ignore[index]
    assert rlc["default"]["level1"]["reservedNode"] == 3
    assert any("kept reservedNode 3" in n for n in r.notes)
    assert {"name": "network-topology-aware"} in conf["tiers"][-1]["plugins"]  # type: ignore[index]
    assert any(n.startswith("warning: no volcano-npu") for n in r.notes)
    asked = merge_resource_level_config(SCHEDULER_CM, topo, origin="cm", reserved_node=1)
    rlc = json.loads(_conf(asked.text)["configurations"][0]["arguments"]["resource-level-config"])  # type: ignore[index]
    assert rlc["default"]["level1"]["reservedNode"] == 1
    assert "network-topology-aware" not in asked.text  # no HyperNodes emitted: left alone


@pytest.mark.parametrize(
    ("config", "rule"),
    [
        ("level2=4", "consecutive from level1"),
        ("level1=2,level3=4", "consecutive from level1"),
        ("level1=3,level2=4", "multiple of the one below"),
        ("level1=2,level2=4", "multiple of every level"),  # 6 replicas
        ("level1=0", "at least 1"),
        ("level1=x", "whole number"),
        ("level1", "one '='"),
        ("l1=2", "level1, level2"),
        ("level1=1,level2=2,level3=6", "the tree has 2"),
    ],
)
def test_affinity_config_rules(config: str, rule: str) -> None:
    problems = affinity_problems(config, 6, 2)
    assert problems and any(rule in p for p in problems), problems


def test_affinity_config_valid_and_derived() -> None:
    assert affinity_problems("level1=2,level2=6", 12, 2) == []
    topo = ascend_superpod().topology
    job = make_job(topo, 8, mode=Mode.REQUIRED, level="group", slices=[("superpod", 4)])
    assert ascend_annotations(topo, job, 0) == {
        "huawei.com/schedule_policy": "multilevel",
        "huawei.com/affinity-config": "level1=4,level2=8",
    }
    job = make_job(topo, 8, mode=Mode.REQUIRED, level="superpod")
    assert ascend_annotations(topo, job, 1) == {
        "huawei.com/schedule_policy": "multilevel",
        "huawei.com/affinity-config": "level1=8",
    }
    assert ascend_annotations(oci_rdma().topology, job, 1) is None


def test_advise_and_check_reject_a_bad_affinity_config(
    capsys: pytest.CaptureFixture[str],
) -> None:
    csv = str(GOLDEN / "ascend.csv")
    check = ["check", "--profile", "ascend-superpod", "--from-csv", csv]
    assert main([*check, "--affinity-config", "level1=3,level2=4", "--replicas", "8"]) == 2
    assert "multiple of the one below" in capsys.readouterr().err
    assert main([*check, "--affinity-config", "level1=2,level2=4", "--replicas", "8"]) == 0
