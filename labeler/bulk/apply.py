"""Bulk labeling from a CSV: plan (a diff per node against one LIST), then apply or delete.

The flow is one-way and validated up front: the whole CSV is checked (labeler.core.sheet),
the nodes are listed once, every node's change is planned with the ownership rules
(labeler.core.plan, docs/architecture.md), missing nodes stop the run before the first
write, and only nodes whose plan is not a no-op get one patch each. So a re-run of the same
CSV makes zero writes, and a label the project does not own is never overwritten or removed without
``--adopt``.

Planning and formatting here are pure; the writes and their report are in
labeler.bulk.writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from labeler.base.errors import InputError
from labeler.base.logs import logger
from labeler.core.node import NodeLabels
from labeler.core.plan import Desired, LabelPlan, Writer, describe, plan_labels
from labeler.core.profiles import Profile
from labeler.core.sheet import CsvRow, LabelSheet
from labeler.kube.nodes import list_node_labels

if TYPE_CHECKING:
    from labeler.core.slinky import Slinky

log = logger(__name__)

MISSING_SHOWN = 10  # missing nodes named in the error; the heading counts them all


class Action(Enum):
    APPLY = "apply"
    DELETE = "delete"


@dataclass(frozen=True)
class BulkOptions:
    """How to read the CSV against the cluster.

    - ``adopt``: take over (apply) or remove (delete) values the project does not own, as
      ``kubectl label --overwrite`` / ``key-`` do (the MindCluster twin always does).
    - ``all_keys``: delete only — remove every CSV key, also where the node's cell is empty.
    - ``skip_missing``: nodes of the CSV that are not in the cluster are reported, not fatal.
    - ``slinky``: also keep the Slinky topology annotation, computed from each node's
      labels as they will be after the write.
    """

    action: Action = Action.APPLY
    adopt: bool = False
    all_keys: bool = False
    skip_missing: bool = False
    slinky: Slinky | None = None


def desired_from_row(row: CsvRow, keys: Sequence[str], opts: BulkOptions) -> Desired | None:
    """What the CSV asks of one node; None when the row asks nothing (skipped)."""
    if opts.action is Action.APPLY:
        # An empty cell leaves the key as it is (MindCluster's rule): nothing to prune.
        return Desired(set=dict(row.values), writer=Writer.BULK) if row.values else None
    remove = frozenset(keys) if opts.all_keys else frozenset(row.values)
    return Desired(remove=remove, writer=Writer.BULK) if remove else None


@dataclass(frozen=True)
class NodeDiff:
    """One CSV row against the node as listed: the plan, or why there is none."""

    node: str
    line: int
    desired: Desired | None
    plan: LabelPlan | None = None
    current: Mapping[str, str] | None = None  # the node's labels; None = not in the cluster

    @property
    def missing(self) -> bool:
        return self.current is None and self.desired is not None

    @property
    def skipped(self) -> bool:
        return self.desired is None

    @property
    def changes(self) -> bool:
        return self.plan is not None and not self.plan.is_noop

    @property
    def conflicts(self) -> bool:
        return self.plan is not None and bool(self.plan.conflicts)


@dataclass(frozen=True)
class BulkPlan:
    """The diff of a whole CSV against the cluster. No I/O; printable and countable."""

    path: str
    options: BulkOptions
    diffs: tuple[NodeDiff, ...]
    nodes: Mapping[str, NodeLabels]

    @property
    def to_change(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.changes]

    @property
    def unchanged(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.plan is not None and d.plan.is_noop]

    @property
    def with_conflicts(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.conflicts]

    @property
    def missing(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.missing]

    @property
    def skipped(self) -> list[NodeDiff]:
        return [d for d in self.diffs if d.skipped]

    def warnings(self) -> list[str]:
        what = (
            "no values (an empty cell leaves a label as it is)"
            if self.options.action is Action.APPLY
            else "no values to delete (empty cells are kept unless --all-keys)"
        )
        return [f"{self.path}:{d.line}: node {d.node!r} has {what}; skipped" for d in self.skipped]

    def missing_error(self) -> InputError | None:
        """The error that stops apply/delete before any write, or None."""
        missing = self.missing
        if not missing or self.options.skip_missing:
            return None
        # A CSV for the wrong cluster misses every node: name a few, count the rest.
        shown = missing[:MISSING_SHOWN]
        problems = [f"{self.path}:{d.line}: node {d.node!r} is not in the cluster" for d in shown]
        if len(missing) > len(shown):
            problems.append(f"… and {len(missing) - len(shown)} more")
        return InputError(
            problems,
            heading=(
                f"{len(missing)} node(s) of {self.path} are not in the cluster; nothing "
                "written. Fix the names (see 'kubectl get nodes'), check --context, or pass "
                "--skip-missing-nodes to label the others:"
            ),
        )

    def summary(self) -> str:
        return (
            f"{len(self.diffs)} node(s): {len(self.to_change)} to change, "
            f"{len(self.unchanged)} unchanged, {len(self.with_conflicts)} with conflicts, "
            f"{len(self.missing)} missing, {len(self.skipped)} skipped"
        )


def plan_bulk(
    sheet: LabelSheet, nodes: Iterable[NodeLabels], opts: BulkOptions = BulkOptions()
) -> BulkPlan:
    """Diff every row of ``sheet`` against the listed ``nodes`` under the ownership rules."""
    by_name = {n.name: n for n in nodes}
    diffs = []
    # Rows repeat a few combinations of values: a Desired is a frozen value, so one serves
    # every row that asks the same (building one costs more than the rest of a row's plan).
    wishes: dict[tuple[tuple[str, str], ...], Desired | None] = {}
    for row in sheet.rows:
        asked = tuple(row.values.items())
        if asked not in wishes:
            wishes[asked] = desired_from_row(row, sheet.keys, opts)
        desired = wishes[asked]
        node = by_name.get(row.node)
        if desired is None or node is None:
            current = node.labels if node is not None else None
            diffs.append(NodeDiff(row.node, row.line, desired, None, current))
            continue
        if opts.slinky is not None:
            desired = opts.slinky.add_to(desired, node.labels)
        plan = plan_labels(node, desired, adopt=opts.adopt)
        diffs.append(NodeDiff(row.node, row.line, desired, plan, node.labels))
    return BulkPlan(sheet.path, opts, tuple(diffs), by_name)


# --- formatting: one greppable line per change ---------------------------------------


def describe_diff(diff: NodeDiff, *, show_unchanged: bool = False) -> list[str]:
    """One CSV row's plan in the renderer every plan shares (``labeler.core.plan.describe``)."""
    if diff.missing:
        return [f"{diff.node}: missing (not in the cluster)"]
    if diff.plan is None or diff.current is None:
        return []
    return describe(diff.plan, diff.current, show_unchanged=show_unchanged)


# --- export --------------------------------------------------------------------------


@dataclass(frozen=True)
class Export:
    keys: tuple[str, ...]
    rows: tuple[tuple[str, Mapping[str, str]], ...]
    warnings: tuple[str, ...] = ()


def export_rows(nodes: Iterable[NodeLabels], profile: Profile) -> Export:
    """Today's labels of ``profile`` as CSV rows that ``apply`` accepts.

    Keys in profile order (tree label, levels widest first, extras); columns nobody has are
    left out; nodes with none of the keys are left out. A label with an empty value cannot
    be written in the CSV (an empty cell means "no label"), so it is left out with a warning.
    """
    keys = profile.all_keys
    rows: list[tuple[str, dict[str, str]]] = []
    warnings: list[str] = []
    for node in sorted(nodes, key=lambda n: n.name):
        values = {}
        for key in keys:
            value = node.labels.get(key)
            if value == "":
                warnings.append(
                    f"{node.name}: {key} has an empty value, which a CSV cell cannot express; "
                    "left out of the export"
                )
            elif value is not None:
                values[key] = value
        if values:
            rows.append((node.name, values))
    used = tuple(k for k in keys if any(k in v for _, v in rows))
    return Export(used, tuple(rows), tuple(warnings))


# --- against a cluster -----------------------------------------------------------------


def cluster_plan(api: Any, sheet: LabelSheet, opts: BulkOptions = BulkOptions()) -> BulkPlan:
    """One paginated LIST of the nodes, then the pure plan."""
    return plan_bulk(sheet, list_node_labels(api), opts)


def cluster_export(api: Any, profile: Profile, *, label_selector: str | None = None) -> Export:
    return export_rows(list_node_labels(api, label_selector=label_selector), profile)
