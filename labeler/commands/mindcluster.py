"""Drop-in twins of MindCluster's ``multilevel-label-tool`` scripts, on our engine.

``tools/label_tool.py`` and ``tools/lld_parser.py`` call ``label_tool_main`` and
``lld_parser_main``. Command lines, prompts, messages and exit codes are the originals'
(docs/bulk.md, "Drop-in twins"), so runbooks and scripts keep working. The policy is the
original's too: keys named in the CSV are overwritten or removed whoever set them (as its
``kubectl label --overwrite`` / ``key-`` did), and what the twin writes is recorded as
owned; nodes not in the cluster fail one by one while the others are labeled; short rows
are padded, repeated rows applied once, rows without a node name skipped with a warning.

Underneath it is the bulk engine: the CSV is validated before any write, nodes are listed
once and patched concurrently, and only changed nodes are written. Where the original is
plainly broken the twin refuses instead, with a clearer error and nothing written; the
table of differences there lists each case and why.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

from labeler.base.errors import Exit, LabelerError
from labeler.base.logs import LogFormat, setup_logging
from labeler.bulk import apply as bulk
from labeler.bulk import lld, writes
from labeler.bulk.pace import Pace
from labeler.commands._base import cluster
from labeler.core.plan import conflict_line
from labeler.core.sheet import (
    LIKE_MINDCLUSTER,
    BadFirstHeader,
    LabelSheet,
    TooFewRows,
    read_label_csv,
)


class _NoAnswer(Exception):
    """Standard input closed while a prompt waited (a pipe, ``< /dev/null``, Ctrl-D)."""


def _ask(question: str) -> str:
    try:
        return input(question).strip()
    except EOFError:
        print()  # end the prompt's line
        raise _NoAnswer from None


def _prompt_csv_path() -> str:
    while True:
        try:
            path = _ask("Please enter the absolute path to the CSV file: ")
        except _NoAnswer:
            raise _NoAnswer(
                "no CSV file path given (standard input is closed); "
                "pass --config-path /path/to/labels.csv"
            ) from None
        if os.path.exists(path):
            return path
        print(f"Error: File '{path}' does not exist. Please try again.")


def _interruptible(main: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a twin: closed stdin at a prompt → exit 1, Ctrl-C → 130; both without a traceback.

    The originals die with a traceback in both cases.
    """
    try:
        return main(args)
    except _NoAnswer as e:
        print(f"Error: {e}")
        return Exit.ERROR
    except KeyboardInterrupt:
        print("\nInterrupted.")
        return Exit.INTERRUPTED


def label_tool_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Add or remove labels for Kubernetes nodes based on CSV file "
        "(topology-labeler's twin of MindCluster's label_tool.py)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "Examples:\n"
            "  %(prog)s apply --config-path /path/to/labels.csv\n"
            "  %(prog)s delete --config-path /path/to/labels.csv\n"
            "  %(prog)s apply  # Without --config-path, will enter interactive mode\n"
        ),
    )
    sub = parser.add_subparsers(dest="command", help="Available commands", required=True)
    for name, text in (("apply", "Add labels to nodes"), ("delete", "Remove labels from nodes")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--config-path", help="Absolute path to CSV file")
        # Accepted so scripts written for an earlier twin keep working; it no longer
        # changes anything, since the twin always overwrites like the original.
        p.add_argument("--adopt", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("--concurrency", type=int, default=Pace.concurrency, help=argparse.SUPPRESS)
        # The original's kubectl read $KUBECONFIG; so does this. The flags are ours, so the
        # "no cluster configured: pass --kubeconfig" hint is true here too.
        p.add_argument(
            "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
        )
        p.add_argument("--context", help="kubeconfig context (default: its current context)")
    return parser


def label_tool_main(argv: Sequence[str] | None = None) -> int:
    args = label_tool_parser().parse_args(argv)
    # Errors only: the result is printed, and retry warnings would be noise around it.
    setup_logging("error", LogFormat.TEXT)
    return _interruptible(_label_tool, args)


# The line kubectl printed for a node that does not exist, which the original relayed.
_NOT_FOUND = 'Error from server (NotFound): nodes "{}" not found'


def _read_sheet(path: str) -> LabelSheet | None:
    """The CSV read as the original reads it; None (after printing why) if unusable."""
    try:
        sheet = read_label_csv(path, leniency=LIKE_MINDCLUSTER)
    except (TooFewRows, BadFirstHeader) as e:
        first = (
            "CSV file must contain at least a header row and one data row"
            if isinstance(e, TooFewRows)
            else "First column of CSV file must be 'nodeName'"
        )
        print(f"Error: {first}")  # the original's words, which runbooks grep for
        print(e)
        return None
    except LabelerError as e:
        print(f"Error: {e}")
        return None
    warnings = [(row, f"Warning: Row {row} has empty nodeName, skipped") for row in sheet.unnamed]
    warnings += [
        (row, f"Warning: Row {row} repeats row {first}, applied once")
        for row, first in sheet.repeats
    ]
    for _, line in sorted(warnings):  # in row order, as the original prints while reading
        print(line)
    return sheet


def _label_tool(args: argparse.Namespace) -> int:
    path = args.config_path or _prompt_csv_path()
    if not os.path.exists(path):
        print(f"Error: File '{path}' does not exist")
        return Exit.ERROR
    action = "Adding" if args.command == "apply" else "Removing"
    print(f"Starting {action.lower()} labels...")
    sheet = _read_sheet(path)
    if sheet is None:
        return Exit.ERROR
    if not sheet.rows:
        print("No valid nodes to process.")
        return Exit.OK
    # The original's policy on the shared engine: overwrite like kubectl, remove every
    # header key on delete (also where the cell is empty), label the nodes that exist.
    opts = bulk.BulkOptions(
        action=bulk.Action(args.command),
        adopt=True,
        all_keys=args.command == "delete",
        skip_missing=True,
    )
    try:
        api = cluster(args, concurrency=args.concurrency)
        plan = bulk.cluster_plan(api, sheet, opts)
        report = writes.run(api, plan, pace=Pace(concurrency=args.concurrency))
    except LabelerError as e:
        print(f"Error: {e}")
        return Exit.ERROR
    if report.interrupted:  # Ctrl-C or SIGTERM: the writes under way finished, no other
        print(
            f"\nInterrupted: {len(report.written)} node(s) written, {report.not_written} "
            "not; run the same command again to finish."
        )
        return report.interrupted
    missing = [d.node for d in plan.missing]
    failed = {node: _NOT_FOUND.format(node) for node in missing}
    failed.update((o.node, o.error or "") for o in report.failed)
    for node, conflicts in report.conflicted().items():
        failed.setdefault(node, "; ".join(conflict_line(c) for c in conflicts))
    # A row with no values counts as processed: the original ran nothing for it and
    # counted it a success.
    ok = [d.node for d in plan.diffs if d.node not in failed]
    if not failed:
        print(f"{action} labels completed successfully!")
        print(f"Processed {len(ok)} nodes.")
        return Exit.OK
    print(f"{action} labels completed, but some nodes failed.")
    if ok:
        print(f"Successful nodes ({len(ok)}): {', '.join(ok)}")
    else:
        print("No successful nodes.")
    print(f"Failed nodes ({len(failed)}) and error messages:")
    for node in (d.node for d in plan.diffs if d.node in failed):
        print(f"  - {node}: {failed[node]}")
    if missing:
        print(
            f"Not in the cluster ({len(missing)}): {', '.join(missing)}; check the names "
            "with 'kubectl get nodes', and the cluster with --kubeconfig or --context"
        )
    return Exit.ERROR


def lld_parser_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Extract data from Excel file and generate CSV file "
        "(topology-labeler's twin of MindCluster's lld_parser.py)"
    )
    parser.add_argument("--input", "-i", help="Input Excel file path")
    parser.add_argument("--output", "-o", help="Output CSV file path")
    parser.add_argument("--topotree-name", "-t", help="Topotree name")
    parser.add_argument(
        "--group-per-rack",
        "-g",
        type=int,
        default=lld.DEFAULT_GROUP_PER_RACK,
        help="Number of frames per group (default: %(default)s). This is used as divisor for "
        "calculating groupid from frame number.",
    )
    return parser


def lld_parser_main(argv: Sequence[str] | None = None) -> int:
    args = lld_parser_parser().parse_args(argv)
    setup_logging("warning", LogFormat.TEXT)
    return _interruptible(_lld_parser, args)


def _answer(question: str) -> str:
    """A prompt where a closed stdin counts as an empty answer (which the caller rejects)."""
    try:
        return _ask(question)
    except _NoAnswer:
        return ""


def _lld_parser(args: argparse.Namespace) -> int:
    source = args.input or _answer("Please enter Excel file path: ")
    if not source:
        print("Error: Input file path is required")
        return Exit.ERROR
    output = args.output
    if not output:
        output = lld.default_output(source)
        print(f"Output file not specified, using default: {output}")
    tree = args.topotree_name or _answer("Please enter topotree name: ")
    if not tree:
        print("Error: Topotree name is required")
        return Exit.ERROR
    if args.group_per_rack <= 0:
        print(f"Error: group-per-rack must be a positive integer, got {args.group_per_rack}")
        return Exit.ERROR
    try:
        table = lld.read_lld(source, tree_name=tree, group_per_rack=args.group_per_rack)
        print(f"Target worksheet found: {table.sheet}")
        for warning in table.warnings:
            print(f"Warning: {warning}")
        # CRLF, as the original's csv.writer wrote; no BOM (its own label tool trips on it).
        count = lld.write_lld_csv(table, output, line_end="\r\n")
    except LabelerError as e:
        _print_lld_error(e, source)
        print("Script execution failed")
        return Exit.ERROR
    print(f"CSV file successfully generated: {output}")
    print(f"Processed {count} rows of data")
    print(f"Topotree name: {tree}")
    print(f"Group per rack (divisor): {args.group_per_rack}")
    print("Script execution completed")
    return Exit.OK


def _print_lld_error(e: LabelerError, source: str) -> None:
    """The original's error line first (runbooks grep for it), then our detail."""
    if isinstance(e, lld.NoWorkbook):
        print(f"Error: Input file '{source}' does not exist")
        return
    if isinstance(e, lld.NoPlanSheet):
        print(f"Error: Worksheet containing '{lld.SHEET_MARK}' not found")
        print(e)
        return
    if isinstance(e, lld.LldError) and e.sheet is not None:
        print(f"Target worksheet found: {e.sheet}")
    if isinstance(e, lld.MissingHeaders):
        print(f"Error: The following headers are not found: {', '.join(e.missing)}")
        print(e)
        return
    print(f"Error: {e}")
