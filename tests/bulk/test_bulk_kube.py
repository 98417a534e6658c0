"""Bulk apply/delete/export against the fake API server, over HTTP with the real client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from labeler.base.errors import InputError
from labeler.bulk import apply as bulk
from labeler.bulk import writes
from labeler.bulk.apply import Action, BulkOptions
from labeler.bulk.pace import Pace
from labeler.core.node import OWNED_ANNOTATION
from labeler.core.profiles import ascend_superpod
from labeler.core.sheet import parse_label_csv
from tests.fakekube import FakeKube

G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"
S = "huawei.com/topotree.superpodid"


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube() as f:
        yield f


def csv_for(names: list[str], group: Any = lambda i: str(i // 4), tree: str = "t") -> str:
    rows = [f"{n},{group(i)},{tree}" for i, n in enumerate(names)]
    return "\n".join([f"nodeName,{G},{T}", *rows]) + "\n"


def apply(fake: FakeKube, text: str, **opts: Any) -> writes.BulkReport:
    api = fake.cluster()
    conc = opts.pop("concurrency", 4)
    plan = bulk.cluster_plan(api, parse_label_csv(text, "c.csv"), BulkOptions(**opts))
    return writes.run(api, plan, pace=Pace(concurrency=conc))


def test_apply_patches_each_changed_node_once_then_rerun_writes_nothing(fake: FakeKube) -> None:
    names = fake.seed_nodes(30)
    fake.set_node_labels(names[0], {G: "0", T: "t"})  # already right: not touched
    text = csv_for(names)
    fake.clear_journal()
    report = apply(fake, text)
    assert report.exit_code == 0
    assert fake.counts() == {"list": 1, "patch": 29}
    assert len(report.written) == 29
    for i, n in enumerate(names):
        node = fake.get_node(n)
        assert node["metadata"]["labels"][G] == str(i // 4)
        assert node["metadata"]["labels"][T] == "t"
    owned = fake.get_node(names[1])["metadata"]["annotations"][OWNED_ANNOTATION]
    assert owned == f"{T},{G}" or owned == ",".join(sorted([G, T]))
    assert OWNED_ANNOTATION not in (fake.get_node(names[0])["metadata"].get("annotations") or {})
    # Patches are merge patches carrying the resourceVersion (a concurrent edit gives 409).
    p = fake.requests(verb="patch")[0]
    assert p.content_type == "application/merge-patch+json"
    assert p.body["metadata"]["resourceVersion"]

    fake.clear_journal()
    again = apply(fake, text)
    assert fake.counts() == {"list": 1}
    assert again.written == [] and again.exit_code == 0
    assert "30 node(s): 0 labeled, 30 unchanged" in again.summary()


def test_list_is_paginated(fake: FakeKube) -> None:
    names = fake.seed_nodes(1203)
    fake.clear_journal()
    plan = bulk.cluster_plan(fake.cluster(), parse_label_csv(csv_for(names[:3]), "c.csv"))
    assert fake.counts() == {"list": 3}
    assert len(plan.nodes) == 1203


def test_foreign_value_is_a_conflict_unless_adopt(fake: FakeKube) -> None:
    fake.add_node("n1", labels={G: "9"})
    fake.add_node("n2")
    report = apply(fake, csv_for(["n1", "n2"]))
    assert report.exit_code == 3
    assert report.conflicts == 1
    assert fake.get_node("n1")["metadata"]["labels"][G] == "9"
    assert fake.get_node("n1")["metadata"]["labels"][T] == "t"  # the rest is written

    report = apply(fake, csv_for(["n1", "n2"]), adopt=True)
    assert report.exit_code == 0
    n1 = fake.get_node("n1")["metadata"]
    assert n1["labels"][G] == "0"
    assert G in n1["annotations"][OWNED_ANNOTATION].split(",")


def test_missing_nodes_stop_the_run_before_any_write(fake: FakeKube) -> None:
    fake.add_node("n1")
    fake.clear_journal()
    with pytest.raises(InputError) as e:
        apply(fake, csv_for(["n1", "ghost"]))
    assert "c.csv:3: node 'ghost' is not in the cluster" in str(e.value)
    assert fake.count("patch") == 0

    report = apply(fake, csv_for(["n1", "ghost"]), skip_missing=True)
    assert report.exit_code == 0
    assert len(report.plan.missing) == 1
    assert fake.get_node("n1")["metadata"]["labels"][G] == "0"


def test_a_failing_node_is_reported_and_the_others_are_written(fake: FakeKube) -> None:
    names = fake.seed_nodes(6)
    fake.faults.add("PATCH", f"/api/v1/nodes/{names[2]}", status=403, times=None)
    report = apply(fake, csv_for(names))
    assert report.exit_code == 1
    (failure,) = report.failed
    assert failure.node == names[2]
    assert "403 Forbidden" in (failure.error or "")
    assert "1 failed" in report.summary()
    assert fake.get_node(names[3])["metadata"]["labels"][G] == "0"
    assert G not in fake.get_node(names[2])["metadata"]["labels"]


def test_429_and_500_are_retried_honouring_retry_after(fake: FakeKube) -> None:
    names = fake.seed_nodes(3)
    fake.faults.add("PATCH", f"/api/v1/nodes/{names[0]}", status=429, retry_after=1, times=1)
    fake.faults.add("PATCH", f"/api/v1/nodes/{names[1]}", status=503, times=2)
    fake.clear_journal()
    report = apply(fake, csv_for(names))
    assert report.exit_code == 0
    patches = fake.requests(verb="patch")
    assert len(patches) == 6
    first = [r.time for r in patches if r.path.endswith(names[0])]
    assert first[1] - first[0] >= 0.9  # waited for Retry-After: 1
    assert all(G in fake.get_node(n)["metadata"]["labels"] for n in names)


def test_concurrent_edit_gives_409_then_replan(fake: FakeKube) -> None:
    fake.add_node("n1")
    api = fake.cluster()
    plan = bulk.cluster_plan(api, parse_label_csv(csv_for(["n1"]), "c.csv"))
    fake.set_node_labels("n1", {G: "7"})  # someone else, after our LIST
    fake.clear_journal()
    report = writes.run(api, plan)
    # 409 on the stale resourceVersion → GET → re-plan: G is now foreign, T still ours to add.
    assert [r.verb for r in fake.journal] == ["patch", "get", "patch"]
    assert [r.status for r in fake.journal] == [409, 200, 200]
    assert fake.get_node("n1")["metadata"]["labels"][G] == "7"
    assert report.exit_code == 3


def test_delete_removes_owned_keys_only(fake: FakeKube) -> None:
    fake.seed_nodes(3)
    names = ["node-00000", "node-00001", "node-00002"]
    apply(fake, csv_for(names[:2]))
    fake.set_node_labels(names[2], {G: "5", T: "theirs"})  # not ours
    text = f"nodeName,{G},{T}\n{names[0]},x,x\n{names[1]},x,\n{names[2]},x,x\n"
    api = fake.cluster()
    sheet = parse_label_csv(text, "c.csv")
    report = writes.run(api, bulk.cluster_plan(api, sheet, BulkOptions(Action.DELETE)))
    assert report.exit_code == 3
    assert not {G, T} & set(fake.get_node(names[0])["metadata"]["labels"])
    ann = fake.get_node(names[0])["metadata"].get("annotations") or {}
    assert OWNED_ANNOTATION not in ann
    assert fake.get_node(names[1])["metadata"]["labels"].get(T) == "t"  # empty cell: kept
    assert G not in fake.get_node(names[1])["metadata"]["labels"]
    assert fake.get_node(names[2])["metadata"]["labels"][G] == "5"  # not ours: kept

    plan = bulk.cluster_plan(api, sheet, BulkOptions(Action.DELETE, adopt=True, all_keys=True))
    assert writes.run(api, plan).exit_code == 0
    for n in names:
        assert not {G, T} & set(fake.get_node(n)["metadata"]["labels"])


def test_export_then_apply_restores_the_topology(fake: FakeKube) -> None:
    fake.seed_nodes(5, labels_fn=lambda i: {T: "t", G: str(i // 2), S: str(i)} if i < 4 else {})
    api = fake.cluster()
    ex = bulk.cluster_export(api, ascend_superpod())
    assert ex.keys == (T, G, S)
    assert [n for n, _ in ex.rows] == [f"node-0000{i}" for i in range(4)]
    import io

    from labeler.core.sheet import write_label_csv

    buf = io.StringIO()
    write_label_csv(buf, ex.keys, ex.rows)
    for i in range(4):  # lose the topology
        fake.set_node_labels(f"node-0000{i}", {T: None, G: None, S: None})
    report = apply(fake, buf.getvalue(), adopt=True)
    assert report.exit_code == 0
    for i in range(4):
        labels = fake.get_node(f"node-0000{i}")["metadata"]["labels"]
        assert (labels[T], labels[G], labels[S]) == ("t", str(i // 2), str(i))


def test_many_missing_nodes_are_counted_and_a_few_named(fake: FakeKube) -> None:
    fake.add_node("n1")
    ghosts = [f"ghost-{i:06d}" for i in range(100_000)]
    with pytest.raises(InputError) as e:
        apply(fake, csv_for(["n1", *ghosts]))
    text = str(e.value)
    assert text.startswith("100000 node(s) of c.csv are not in the cluster")
    assert len(text.splitlines()) <= 12
    assert "c.csv:3: node 'ghost-000000' is not in the cluster" in text
    assert "… and 99990 more" in text
    assert fake.count("patch") == 0
