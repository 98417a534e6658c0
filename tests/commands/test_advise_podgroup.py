"""``advise -f`` with kube-scheduler PodGroups, as a user types it: from a snapshot file and
from the (fake) cluster, text and JSON, exit codes, bad input, and --html."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from labeler.cli import main
from labeler.core.profiles import oci_rdma
from tests.builders import node, pod
from tests.fakekube import FakeKube
from tests.sim.kubesched.podgroups import composite, gang, member, rack_node

Capture = pytest.CaptureFixture[str]


def _write(path: Path, items: list[dict]) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def _cluster(tmp_path: Path) -> str:
    items = [
        *(rack_node(f"node{i}-rack1", {"rack": "rack-1", "zone": "zone-1"}) for i in (1, 2, 3)),
        rack_node("node4-rack2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node5-rack2", {"rack": "rack-2", "zone": "zone-1"}),
        pod("existing1").namespace("ns").requests(cpu="2").on("node4-rack2").obj(),
    ]
    return _write(tmp_path / "snapshot.yaml", items)


def test_gang_fits_text_and_json(tmp_path: Path, capsys: Capture) -> None:
    snap = _cluster(tmp_path)
    pg = _write(
        tmp_path / "pg.yaml",
        [
            gang("pg1", "rack", 3),
            *(member(f"p{i}", "pg1", cpu="1") for i in (1, 2, 3)),
        ],
    )
    assert main(["advise", "--from-snapshot", snap, "-f", pg]) == 0
    out = capsys.readouterr().out
    assert "Verdict: FITS now" in out and "domain: rack=rack-1" in out
    assert main(["advise", "--from-snapshot", snap, "-f", pg, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is True and doc["message"] == "" and doc["scheduler"] == "kube-scheduler"
    assert [p["name"] for p in doc["pods"]] == ["ns/p1", "ns/p2", "ns/p3"]
    assert {p["node"] for p in doc["pods"]} == {"node1-rack1", "node2-rack1", "node3-rack1"}
    assert doc["groups"][0]["domain"] == {"rack": "rack-1"}


def test_gang_that_does_not_fit_exits_3_with_the_schedulers_message(
    tmp_path: Path, capsys: Capture
) -> None:
    snap = _cluster(tmp_path)
    pods = [member(f"p{i}", "pg1", cpu="2") for i in range(1, 5)]
    pg = _write(tmp_path / "pg.yaml", [gang("pg1", "rack", 4), *pods])
    assert main(["advise", "--from-snapshot", snap, "-f", pg, "-o", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is False
    assert doc["message"] == (
        "pod group is unschedulable, pod group is unschedulable, 0/2 placements are "
        "available, first placement status: minCount (4) cannot be satisfied: 3 scheduled, "
        "0 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
    assert all(p["node"] is None for p in doc["pods"])


def test_from_cluster_reads_podgroups_and_bound_members(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path, capsys: Capture
) -> None:
    for i, rack in enumerate(["rack-1", "rack-1", "rack-2", "rack-2"]):
        fake_kube.add_object(
            "Node",
            rack_node(f"n{i}", {"rack": rack, "zone": "zone-1"}),
        )
    fake_kube.add_object("Namespace", {"metadata": {"name": "ns"}})
    fake_kube.add_object("CompositePodGroup", composite("root", "rack", 2), namespace="ns")
    fake_kube.add_object(
        "Pod",
        pod("early").namespace("ns").requests(cpu="1").scheduling_group("pg1").on("n3").obj(),
        namespace="ns",
    )
    # the file names the two children; their parent and the bound pod are the cluster's
    pg = _write(
        tmp_path / "pg.yaml",
        [
            gang("pg1", None, 2, parent="root"),
            gang("pg2", None, 1, parent="root"),
            member("p1", "pg1", cpu="1"),
            member("p2", "pg2", cpu="1"),
        ],
    )
    code = main(
        ["advise", "--kubeconfig", str(kubeconfig), "--from-cluster", "-f", pg, "-o", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    assert doc["groups"][0]["name"] == "root" and doc["groups"][0]["domain"] == {"rack": "rack-2"}
    paths = {e.path.split("?")[0] for e in fake_kube.journal}
    assert "/apis/scheduling.k8s.io/v1beta1/podgroups" in paths
    assert "/apis/scheduling.k8s.io/v1alpha3/compositepodgroups" in paths


@pytest.mark.parametrize(
    ("extra", "items", "code", "words"),
    [
        (["--pods", "3"], None, 2, "--pods: not used with a PodGroup file"),
        (["--html", "x.html"], None, 2, "--html with a PodGroup file needs --profile"),
        (
            [],
            [
                gang("pg1", "rack", 2, parent="gone"),
                member("p1", "pg1", cpu="1"),
            ],
            1,
            "parent ",
        ),
        ([], [gang("pg1", "rack", 2)], 1, "no pending pod of its PodGroups"),
        (
            [],
            [
                composite("a", "zone", 1, parent="b"),
                composite("b", "zone", 1, parent="a"),
                gang("pg1", "rack", 1, parent="a"),
                member("p1", "pg1", cpu="1"),
            ],
            1,
            "makes a cycle (a → b → a); a hierarchy needs a root without a parent",
        ),
    ],
)
def test_bad_input_is_a_clear_error(
    tmp_path: Path, capsys: Capture, extra: list[str], items, code: int, words: str
) -> None:
    snap = _cluster(tmp_path)
    pg = _write(
        tmp_path / "pg.yaml",
        items
        or [
            gang("pg1", "rack", 2),
            member("p1", "pg1", cpu="1"),
        ],
    )
    assert main(["advise", "--from-snapshot", snap, "-f", pg, *extra]) == code
    err = capsys.readouterr().err
    assert words in err


def test_volcano_podgroups_are_not_taken_for_kube_schedulers(
    tmp_path: Path, capsys: Capture
) -> None:
    snap = _cluster(tmp_path)
    volcano = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg1", "namespace": "ns"},
        "spec": {"minMember": 2},
    }
    pg = _write(tmp_path / "pg.yaml", [volcano])
    main(["advise", "--from-snapshot", snap, "-f", pg])
    assert "kube-scheduler" not in capsys.readouterr().out


def test_html_draws_the_chosen_domain(tmp_path: Path, capsys: Capture) -> None:
    island, nb, lb = oci_rdma().topology.keys
    items = [
        {
            **node(f"gpu-{i}").hostname().allocatable(cpu="2", pods="110").obj(),
            "metadata": {
                "name": f"gpu-{i}",
                "labels": {island: "i1", nb: "nb1", lb: "lb1" if i < 2 else "lb2"},
            },
        }
        for i in range(4)
    ]
    snap = _write(tmp_path / "snap.yaml", items)
    pg = _write(
        tmp_path / "pg.yaml",
        [
            gang("pg1", lb, 2),
            member("p1", "pg1", cpu="1"),
            member("p2", "pg1", cpu="1"),
        ],
    )
    html = tmp_path / "map.html"
    args = ["advise", "--from-snapshot", snap, "-f", pg, "--profile", "oci-rdma"]
    assert main([*args, "--html", str(html)]) == 0
    page = html.read_text()
    assert "FITS now: kube-scheduler binds 2 pod(s)" in page
    assert "map with the placement written to" in capsys.readouterr().err


def test_kueues_tas_pods_count_for_kube_scheduler(tmp_path: Path, capsys: Capture) -> None:
    """A snapshot with Kueue Workloads leaves TAS pods to them for Kueue's advice; the
    default scheduler counts them like any pod."""
    tas = pod("trainer").namespace("ns").requests(cpu="2").on("node1-rack1").obj()
    tas["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": "rack"}
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "trainer", "namespace": "ns"},
        "spec": {"podSets": []},
    }
    snap = _write(
        tmp_path / "snap.yaml",
        [
            *(rack_node(f"node{i}-rack1", {"rack": "rack-1", "zone": "zone-1"}) for i in (1, 2, 3)),
            rack_node("node4-rack2", {"rack": "rack-2", "zone": "zone-1"}),
            rack_node("node5-rack2", {"rack": "rack-2", "zone": "zone-1"}),
            tas,
            workload,
        ],
    )
    five = [
        gang("pg1", "rack", 5),
        *(member(f"p{i}", "pg1", cpu="1") for i in range(1, 6)),
    ]
    pg = _write(tmp_path / "pg.yaml", five)
    # the trainer fills node1: rack-1 has 4 CPUs left, not the 6 that 5 pods would need
    assert main(["advise", "--from-snapshot", snap, "-f", pg, "-o", "json"]) == 3
    assert json.loads(capsys.readouterr().out)["message"] == (
        "pod group is unschedulable, pod group is unschedulable, 0/2 placements are "
        "available, first placement status: minCount (5) cannot be satisfied: 4 scheduled, "
        "0 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
