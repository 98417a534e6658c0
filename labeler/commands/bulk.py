"""``apply``, ``delete``, ``plan``, ``export``, ``lld``: bulk labeling from CSV.

Parsing and printing only; the work is in the labeler.bulk package (sheet, apply, lld).
Exit codes: 0 done; 1 a node failed, a node is missing, or the input is invalid (nothing
written then); 2 bad flags; 3 done, but conflicts were left in place (as ``agent --once``).
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from labeler.base.errors import Exit, UsageError
from labeler.bulk.pace import Pace
from labeler.commands._base import (
    PROFILE_HELP,
    add_command,
    add_profile,
    add_slinky,
    add_tree_name,
    cluster,
    slinky_from_args,
)
from labeler.core.profiles import load_profile

if TYPE_CHECKING:
    from labeler.bulk import apply as bulk

_CONFLICTS = (
    "conflicts were left in place: values topology-labeler did not set or the agent owns "
    "(see --adopt)"
)
_WRITE_EXITS = {
    Exit.OK: "done: every node written or already current",
    Exit.ERROR: "a node failed; or, before any write, a CSV node is not in the cluster, the CSV is "
    "invalid, or the cluster cannot be read",
    Exit.INCOMPLETE: f"done, but {_CONFLICTS}",
    Exit.INTERRUPTED: "Ctrl-C: writes in flight finished (within 10 s), the rest not "
    "started; the summary says which (run again to finish)",
    Exit.TERMINATED: "SIGTERM: the same as Ctrl-C",
}


_PLAN_EXITS = {
    Exit.OK: "planned",
    Exit.ERROR: "a CSV node is not in the cluster, the CSV is invalid, or the cluster "
    "cannot be read",
    Exit.INCOMPLETE: f"planned, but {_CONFLICTS}",
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from labeler.bulk import lld

    p = add_command(sub, common, "plan", exits=_PLAN_EXITS)
    _csv_options(p, delete=False, write=False)
    p.set_defaults(handler=run_plan, action="apply")

    p = add_command(sub, common, "apply", exits=_WRITE_EXITS)
    _csv_options(p, delete=False, write=True)
    p.set_defaults(handler=run_apply, action="apply")

    p = add_command(sub, common, "delete", exits=_WRITE_EXITS)
    _csv_options(p, delete=True, write=True)
    p.set_defaults(handler=run_delete, action="delete")

    p = add_command(sub, common, "export", exits={Exit.OK: "the CSV was written"})
    add_profile(p, tree_name=False)
    p.add_argument("-o", "--output", help="CSV file to write (default: standard output)")
    p.add_argument(
        "-l",
        "--node-selector",
        "--selector",
        dest="selector",
        metavar="SELECTOR",
        help="only nodes matching this label selector (default: every node that has a "
        "label of the profile)",
    )
    p.set_defaults(handler=run_export)

    p = add_command(sub, common, "lld", exits={Exit.OK: "the CSV was written"})
    p.add_argument("-i", "--input", required=True, help="the LLD workbook (.xlsx)")
    p.add_argument(
        "-o", "--output", help="CSV to write (default: <input name>_output.csv; '-' = stdout)"
    )
    add_tree_name(
        p, required=True, short=True, help_text="value of huawei.com/topotree (tree name)"
    )
    p.add_argument(
        "-g",
        "--group-per-rack",
        type=int,
        default=lld.DEFAULT_GROUP_PER_RACK,
        help="frames per group: groupid = (frame - 1) // N (default: %(default)s)",
    )
    p.add_argument(
        "--group-offset",
        type=int,
        default=0,
        metavar="N",
        help="first groupid of this tree; give each tree's workbook its own range so group "
        "IDs stay unique in the cluster (default: 0)",
    )
    p.set_defaults(handler=run_lld)


def _csv_options(p: argparse.ArgumentParser, *, delete: bool, write: bool) -> None:
    p.add_argument("--config-path", required=True, help="the label CSV (nodeName,<key>,...)")
    p.add_argument("--profile", help=f"{PROFILE_HELP}; needed only by --slinky-topology")
    add_slinky(p)
    p.add_argument(
        "--adopt",
        action="store_true",
        help=(
            "also remove keys topology-labeler did not set"
            if delete
            else "overwrite values topology-labeler did not set (default: report a conflict)"
        ),
    )
    p.add_argument(
        "--skip-missing-nodes",
        action="store_true",
        help="report CSV nodes that are not in the cluster instead of failing",
    )
    p.add_argument(
        "--show-unchanged",
        action="store_true",
        help="also print a line for unchanged nodes (lines come in the CSV's order)",
    )
    if delete:
        p.add_argument(
            "--all-keys",
            action="store_true",
            help="remove every CSV key from every CSV node, also where the cell is empty",
        )
    if write:
        p.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
        p.add_argument(
            "--concurrency",
            type=int,
            default=Pace.concurrency,
            help="nodes patched in parallel (default: %(default)s)",
        )
        p.add_argument(
            "--qps",
            type=float,
            default=Pace.qps,
            help="client-side limit of patches per second (default: 0 = none; "
            "the server's 429s are always honoured)",
        )


def _options(args: argparse.Namespace) -> bulk.BulkOptions:
    from labeler.bulk import apply as bulk

    profile = load_profile(args.profile) if args.profile else None
    return bulk.BulkOptions(
        action=bulk.Action(args.action),
        adopt=args.adopt,
        all_keys=getattr(args, "all_keys", False),
        skip_missing=args.skip_missing_nodes,
        slinky=slinky_from_args(args, profile),
    )


def _api(args: argparse.Namespace) -> Any:
    return cluster(args, concurrency=getattr(args, "concurrency", 0))


def _quiet_writer_logs(args: argparse.Namespace) -> None:
    # The per-node result lines say what the writer's INFO log would say, 10,000 times.
    if args.log_level == "info":
        import logging  # here: lld and a CSV refused before the cluster log nothing

        logging.getLogger("labeler.kube.nodes").setLevel(logging.WARNING)


def _warn(warnings: Iterable[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _print_plan(plan: bulk.BulkPlan, show_unchanged: bool, out: TextIO) -> int:
    from labeler.bulk import apply as bulk

    _warn(plan.warnings())
    for diff in plan.diffs:
        for line in bulk.describe_diff(diff, show_unchanged=show_unchanged):
            print(line, file=out)
    print(plan.summary(), file=out)
    err = plan.missing_error()
    if err is not None:
        print(f"error: {err}", file=sys.stderr)
        return Exit.ERROR
    return Exit.INCOMPLETE if plan.with_conflicts else Exit.OK


def run_plan(args: argparse.Namespace) -> int:
    from labeler.core.sheet import read_label_csv

    sheet = read_label_csv(args.config_path)  # a bad CSV is reported before the engine loads
    from labeler.bulk import apply as bulk

    plan = bulk.cluster_plan(_api(args), sheet, _options(args))
    return _print_plan(plan, args.show_unchanged, sys.stdout)


def run_apply(args: argparse.Namespace) -> int:
    return _write(args)


def run_delete(args: argparse.Namespace) -> int:
    return _write(args)


def _write(args: argparse.Namespace) -> int:
    from labeler.base.progress import Progress
    from labeler.bulk import apply as bulk
    from labeler.bulk import writes
    from labeler.core.sheet import read_label_csv

    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.qps < 0:
        raise UsageError(f"--qps must be 0 (no limit) or more, got {args.qps}")
    _quiet_writer_logs(args)
    sheet = read_label_csv(args.config_path)
    api = _api(args)
    plan = bulk.cluster_plan(api, sheet, _options(args))
    if args.dry_run:
        return _print_plan(plan, args.show_unchanged, sys.stdout)
    _warn(plan.warnings())
    err = plan.missing_error()
    if err is not None:
        raise err
    progress = Progress(len(plan.to_change), label=args.action)
    # One line per change, in the CSV's order whatever order the writes end in.
    lines = writes.InOrder(plan, show_unchanged=args.show_unchanged)

    def done(outcome: writes.NodeOutcome) -> None:
        for line in lines.add(outcome):
            progress.line(line)
        progress.advance()

    # The plan and the listed nodes live until this process ends: frozen, the garbage
    # collector does not walk their objects again on each of its passes during the writes.
    gc.freeze()
    try:
        report = writes.run(api, plan, pace=Pace(args.concurrency, args.qps), on_done=done)
        for line in lines.rest():
            progress.line(line)
    finally:
        progress.close()
    for failure in report.failed:
        print(f"failed: {failure.node}: {failure.error}", file=sys.stderr)
    print(report.summary())
    if report.interrupted:
        print(
            f"interrupted: {report.not_written} node(s) not written, "
            f"{len(report.written)} written; run the same command again to finish "
            "(it writes only what still differs)",
            file=sys.stderr,
        )
    return report.exit_code


def run_export(args: argparse.Namespace) -> int:
    from labeler.bulk import apply as bulk
    from labeler.core.sheet import write_label_csv, write_label_csv_file

    profile = load_profile(args.profile)
    export = bulk.cluster_export(_api(args), profile, label_selector=args.selector)
    _warn(export.warnings)
    if not export.rows:
        print(
            f"warning: no node has any label of profile {profile.name} "
            f"({', '.join(profile.all_keys)}); the CSV has a header only",
            file=sys.stderr,
        )
    keys = export.keys or profile.all_keys
    if args.output and args.output != "-":
        count = write_label_csv_file(args.output, keys, export.rows)
        print(f"exported {count} nodes, {len(export.keys)} keys to {args.output}", file=sys.stderr)
    else:
        write_label_csv(sys.stdout, keys, export.rows)
    return Exit.OK


def run_lld(args: argparse.Namespace) -> int:
    from labeler.bulk import lld
    from labeler.core.sheet import write_label_csv

    table = lld.read_lld(
        args.input,
        tree_name=args.topotree_name,
        group_per_rack=args.group_per_rack,
        group_offset=args.group_offset,
    )
    _warn(table.warnings)
    if args.output == "-":
        write_label_csv(sys.stdout, lld.CSV_KEYS, table.rows())
        return Exit.OK
    output = args.output or lld.default_output(args.input)
    count = lld.write_lld_csv(table, output)
    groups = {h.group for h in table.hosts}
    print(
        f"sheet {table.sheet!r}: {count} hosts, {len(groups)} groups "
        f"({min(groups)}..{max(groups)}; the next tree can use --group-offset {max(groups) + 1})"
    )
    print(f"CSV file successfully generated: {output}")
    return Exit.OK
