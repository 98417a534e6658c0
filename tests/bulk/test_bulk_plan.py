"""The bulk plan: a CSV against listed nodes, under the ownership rules. Pure, no I/O."""

from __future__ import annotations

from labeler.bulk.apply import (
    Action,
    BulkOptions,
    describe_diff,
    export_rows,
    plan_bulk,
)
from labeler.bulk.writes import RateLimiter
from labeler.core.node import OWNED_ANNOTATION, NodeLabels
from labeler.core.profiles import ascend_superpod, oci_rdma
from labeler.core.sheet import parse_label_csv
from tests.builders import node

G = "huawei.com/topotree.groupid"
T = "huawei.com/topotree"
S = "huawei.com/topotree.superpodid"

CSV = f"nodeName,{G},{T}\nn1,0,t\nn2,1,t\nn3,2,\nn4,,\nn5,3,t\n"


NODES = [
    node("n1").plan_view(),  # all new
    node("n2").labels({G: "0", T: "t"}).owned(G).plan_view(),  # G owned, changes; T already right
    node("n3").labels({G: "9"}).plan_view(),  # G foreign → conflict
    node("n4").labels({G: "5"}).plan_view(),  # row without values
]


def lines(plan: object) -> list[str]:
    return [line for d in plan.diffs for line in describe_diff(d)]  # type: ignore[attr-defined]


def test_apply_plan_lines_and_summary() -> None:
    plan = plan_bulk(parse_label_csv(CSV, "c.csv"), NODES)
    assert lines(plan) == [
        f"n1: add {T}=t",
        f"n1: add {G}=0",
        f"n2: change {G}: 0 → 1",
        f"n3: conflict {G}: has '9' (not ours), wanted '2' (--adopt takes it over)",
        "n5: missing (not in the cluster)",
    ]
    assert plan.summary() == (
        "5 node(s): 2 to change, 1 unchanged, 1 with conflicts, 1 missing, 1 skipped"
    )
    assert plan.warnings() == [
        "c.csv:5: node 'n4' has no values (an empty cell leaves a label as it is); skipped"
    ]
    err = plan.missing_error()
    assert err is not None
    assert "c.csv:6: node 'n5' is not in the cluster" in str(err)
    assert "--skip-missing-nodes" in str(err)


def test_skip_missing_makes_missing_nodes_non_fatal() -> None:
    plan = plan_bulk(parse_label_csv(CSV, "c.csv"), NODES, BulkOptions(skip_missing=True))
    assert plan.missing_error() is None
    assert [d.node for d in plan.missing] == ["n5"]


def test_adopt_takes_over_foreign_value_and_claims_it() -> None:
    plan = plan_bulk(parse_label_csv(CSV, "c.csv"), NODES, BulkOptions(adopt=True))
    n3 = next(d for d in plan.diffs if d.node == "n3")
    assert n3.plan is not None
    assert dict(n3.plan.labels) == {G: "2"}
    assert n3.plan.annotations[OWNED_ANNOTATION] == G
    assert describe_diff(n3) == [f"n3: change {G}: 9 → 2"]


def test_rerun_after_apply_is_all_unchanged() -> None:
    sheet = parse_label_csv(CSV, "c.csv")
    first = plan_bulk(sheet, NODES, BulkOptions(adopt=True, skip_missing=True))
    after = []
    for n in NODES:
        d = next(x for x in first.diffs if x.node == n.name)
        labels = dict(n.labels)
        ann = dict(n.annotations)
        if d.plan is not None:
            for k, v in d.plan.labels.items():
                if v is None:
                    labels.pop(k, None)
                else:
                    labels[k] = v
            for k, v in d.plan.annotations.items():
                if v is None:
                    ann.pop(k, None)
                else:
                    ann[k] = v
        after.append(NodeLabels(n.name, labels, ann, "2"))
    again = plan_bulk(sheet, after, BulkOptions(adopt=True, skip_missing=True))
    assert again.to_change == []
    assert lines(again) == ["n5: missing (not in the cluster)"]


def test_value_already_right_is_left_alone_and_not_claimed() -> None:
    plan = plan_bulk(
        parse_label_csv(f"nodeName,{T}\nn1,t\n", "c.csv"),
        [node("n1").labels({T: "t"}).plan_view()],
    )
    (d,) = plan.diffs
    assert d.plan is not None and d.plan.is_noop
    assert describe_diff(d, show_unchanged=True) == ["n1: unchanged"]


def test_delete_removes_owned_keys_only_and_skips_empty_cells() -> None:
    csv = f"nodeName,{G},{T}\nn1,0,\nn2,x,x\n"
    nodes = [
        node("n1").labels({G: "0", T: "t"}).owned(G, T).plan_view(),
        node("n2").labels({G: "1", T: "t"}).plan_view(),
    ]
    plan = plan_bulk(parse_label_csv(csv, "c.csv"), nodes, BulkOptions(Action.DELETE))
    assert lines(plan) == [
        f"n1: remove {G} (was '0')",  # T kept: its cell is empty
        f"n2: conflict {T}: has 't' (not ours), left in place (--adopt removes it)",
        f"n2: conflict {G}: has '1' (not ours), left in place (--adopt removes it)",
    ]
    n1 = plan.diffs[0].plan
    assert n1 is not None and n1.annotations[OWNED_ANNOTATION] == T


def test_delete_all_keys_and_adopt() -> None:
    csv = f"nodeName,{G},{T}\nn1,,\nn2,x,\n"
    nodes = [
        node("n1").labels({G: "0", T: "t"}).owned(G, T).plan_view(),
        node("n2").labels({G: "1", T: "t"}).plan_view(),
    ]
    opts = BulkOptions(Action.DELETE, adopt=True, all_keys=True)
    plan = plan_bulk(parse_label_csv(csv, "c.csv"), nodes, opts)
    assert lines(plan) == [
        f"n1: remove {T} (was 't')",
        f"n1: remove {G} (was '0')",
        f"n2: remove {T} (was 't')",
        f"n2: remove {G} (was '1')",
    ]
    assert plan.skipped == []


def test_delete_without_all_keys_skips_rows_without_values() -> None:
    plan = plan_bulk(
        parse_label_csv(f"nodeName,{G}\nn1,\n", "c.csv"),
        [node("n1").plan_view()],
        BulkOptions(Action.DELETE),
    )
    assert [d.node for d in plan.skipped] == ["n1"]
    assert "empty cells are kept unless --all-keys" in plan.warnings()[0]


def test_export_keeps_profile_order_and_drops_unused_columns() -> None:
    nodes = [
        node("b").labels({S: "7", T: "t", "other": "x"}).plan_view(),
        node("a").labels({G: "1", S: "7", T: "t"}).plan_view(),
        node("c").labels({"other": "x"}).plan_view(),  # none of the profile's keys: left out
        node("d").labels({G: "", S: "8"}).plan_view(),  # an empty value cannot be a CSV cell
    ]
    ex = export_rows(nodes, ascend_superpod())
    assert ex.keys == (T, G, S)
    assert [r[0] for r in ex.rows] == ["a", "b", "d"]
    assert dict(ex.rows[1][1]) == {S: "7", T: "t"}
    assert ex.warnings == (
        f"d: {G} has an empty value, which a CSV cell cannot express; left out of the export",
    )
    assert export_rows(nodes, oci_rdma()).rows == ()


def test_rate_limiter_spaces_calls() -> None:
    now = [10.0]
    rl = RateLimiter(4, clock=lambda: now[0])
    assert [rl.delay() for _ in range(3)] == [0.0, 0.25, 0.5]
    now[0] = 20.0
    assert rl.delay() == 0.0
    assert RateLimiter(0).delay() == 0.0
