"""What a bulk run reports (labeler.bulk.writes): every row of the CSV counted once whatever
happened to the writes, and the per-node lines in the CSV's order whatever order the writes
ended in. Pure: plans from labeler.bulk.apply, outcomes made up."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from labeler.bulk.apply import BulkOptions, BulkPlan, plan_bulk
from labeler.bulk.writes import KINDS, BulkReport, InOrder, NodeOutcome
from labeler.core.node import OWNED_ANNOTATION, NodeLabels
from labeler.core.plan import Desired, Writer, plan_labels
from labeler.core.sheet import parse_label_csv

G = "huawei.com/topotree.groupid"


def plan_of(rows: list[tuple[str, str]], nodes: list[NodeLabels]) -> BulkPlan:
    csv = f"nodeName,{G}\n" + "".join(f"{n},{v}\n" for n, v in rows)
    return plan_bulk(parse_label_csv(csv, "c.csv"), nodes, BulkOptions(skip_missing=True))


# A node for each way a row can stand before the writes.
NODES = {
    "new": NodeLabels("new", {}, {}, "1"),
    "same": NodeLabels("same", {G: "1"}, {OWNED_ANNOTATION: G}, "1"),
    "foreign": NodeLabels("foreign", {G: "9"}, {}, "1"),
}


def rows_for(names: list[str]) -> list[tuple[str, str]]:
    # "gone" is not in the cluster; "blank" has an empty cell (skipped).
    return [(n, "" if n.startswith("blank") else "1") for n in names]


WHAT_HAPPENED = st.sampled_from(["written", "failed", "replan-noop", "replan-conflict", "none"])


def outcome(plan: BulkPlan, node: str, what: str) -> NodeOutcome | None:
    diff = next(d for d in plan.diffs if d.node == node)
    assert diff.current is not None and diff.plan is not None
    if what == "none":  # never written (a stop before it started)
        return None
    if what == "failed":
        return NodeOutcome(node, diff.plan, diff.current, error="500 Internal Server Error")
    if what == "written":
        return NodeOutcome(node, diff.plan, diff.current, written=True)
    # A 409 and a re-plan on the node read again: someone wrote the same value, or another.
    value = "1" if what == "replan-noop" else "7"
    again = plan_labels(
        NodeLabels(node, {G: value}, {}, "2"), Desired(set={G: "1"}, writer=Writer.BULK)
    )
    return NodeOutcome(node, again, diff.current)


@settings(max_examples=200, deadline=None)
@given(
    kinds=st.lists(
        st.sampled_from(["new", "same", "foreign", "gone", "blank"]), min_size=1, max_size=30
    ),
    happened=st.lists(WHAT_HAPPENED, min_size=30, max_size=30),
    interrupted=st.sampled_from([0, 130, 143]),
)
def test_every_row_counts_once_whatever_happened(
    kinds: list[str], happened: list[str], interrupted: int
) -> None:
    names = [f"{k}{i}" for i, k in enumerate(kinds)]
    nodes = [
        NodeLabels(n, dict(NODES[k].labels), dict(NODES[k].annotations), "1")
        for n, k in zip(names, kinds, strict=True)
        if k in NODES
    ]
    plan = plan_of(rows_for(names), nodes)
    outcomes = [
        o
        for d, what in zip(plan.to_change, happened, strict=False)
        if (o := outcome(plan, d.node, what)) is not None
    ]
    report = BulkReport(plan, tuple(outcomes), 1.0, interrupted)
    counted = [n for kind in KINDS for n in report.rows[kind]]
    assert sorted(counted) == sorted(names)  # each row once
    summary = report.summary()
    numbers = [
        int(part.split()[0]) for part in summary.split(": ", 1)[1].split(" (")[0].split(", ")
    ]
    assert sum(numbers) == len(names) == int(summary.split(" ")[0])
    assert f"({sum(o.written for o in outcomes)} patches" in summary


def test_the_counts_of_a_409_with_nothing_left_and_of_a_write_with_a_conflict_left() -> None:
    plan = plan_of(
        [("a", "1"), ("b", "1"), ("c", "1")], [NodeLabels(n, {}, {}, "1") for n in "abc"]
    )
    outcomes = (
        outcome(plan, "a", "written"),
        outcome(plan, "b", "replan-noop"),  # refused by 409, then nothing to do
        outcome(plan, "c", "replan-conflict"),
    )
    report = BulkReport(plan, tuple(o for o in outcomes if o), 0.5)
    assert report.summary() == (
        "3 node(s): 1 labeled, 1 unchanged, 0 failed, 1 with conflicts, 0 missing, 0 skipped "
        "(1 patches in 0.5s)"
    )
    assert report.exit_code == 3


def test_lines_come_in_the_csv_order_whatever_order_the_writes_end_in() -> None:
    names = ["z", "a", "same", "m", "foreign", "b"]
    nodes = [NodeLabels(n, {}, {}, "1") for n in ("z", "a", "m", "b")]
    nodes += [NODES["same"], NODES["foreign"]]
    plan = plan_of(rows_for(names), nodes)
    lines = InOrder(plan, show_unchanged=True)
    done = {n: outcome(plan, n, "written") for n in ("z", "a", "m", "b")}
    out = lines.add(done["b"]) + lines.add(done["m"])  # the last rows first: held back
    assert out == []
    out += lines.add(done["z"])
    assert out == [f"z: add {G}=1"]
    out += lines.add(done["a"])  # a, then the rows after it up to the next not done
    assert out[1:] == [
        f"a: add {G}=1",
        "same: unchanged",
        f"m: add {G}=1",
        f"foreign: conflict {G}: has '9' (not ours), wanted '1' (--adopt takes it over)",
        f"b: add {G}=1",
    ]
    assert lines.rest() == []


def test_rows_never_written_are_passed_over_at_the_end() -> None:
    plan = plan_of(
        [("a", "1"), ("b", "1"), ("c", "1")], [NodeLabels(n, {}, {}, "1") for n in "abc"]
    )
    lines = InOrder(plan)
    failed = NodeOutcome("c", None, {}, error="stopped by a signal")
    assert lines.add(failed) == []  # waits for a and b
    assert lines.rest() == ["c: failed: stopped by a signal"]  # a and b never started
