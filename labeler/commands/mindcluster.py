"""Drop-in twins of MindCluster's ``multilevel-label-tool`` scripts, on our engine.

``tools/label_tool.py`` and ``tools/lld_parser.py`` call ``label_tool_main`` and
``lld_parser_main``. Command lines, prompts, success lines and exit codes are the
originals', so runbooks and scripts keep working;
underneath, the CSV is validated before any write, nodes are listed once and patched
concurrently, only changed nodes are written, and labels the project does not own are
left alone. Deliberate differences, all safer:

- a foreign value (not written by topology-labeler) is not overwritten: the node is
  listed as failed with the reason, and ``--adopt`` (our addition) takes it over, which
  is what the original's ``kubectl label --overwrite`` did;
- nodes that are not in the cluster, and any invalid cell, fail the run before the
  first write instead of half-way through;
- the LLD is read row by row (a blank cell no longer shifts the host/frame pairing) and
  the CSV is written without a BOM, so this label tool (and the original) can read it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

from labeler.bulk import apply as bulk
from labeler.bulk import lld
from labeler.bulk.sheet import read_label_csv
from labeler.errors import LabelerError
from labeler.kube.client import ClusterOptions, api_client
from labeler.logs import setup_logging


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
        return 1
    except KeyboardInterrupt:
        print("\nInterrupted.")
        return 130


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
        p.add_argument(
            "--adopt",
            action="store_true",
            help="also overwrite/remove label values that topology-labeler did not set "
            "(the original tool's kubectl --overwrite behaviour)",
        )
        p.add_argument("--concurrency", type=int, default=16, help=argparse.SUPPRESS)
        # The original's kubectl read $KUBECONFIG; so does this. The flags are ours, so the
        # "no cluster configured: pass --kubeconfig" hint is true here too.
        p.add_argument(
            "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
        )
        p.add_argument("--context", help="kubeconfig context (default: its current context)")
    return parser


def label_tool_main(argv: Sequence[str] | None = None) -> int:
    args = label_tool_parser().parse_args(argv)
    setup_logging("warning")
    return _interruptible(_label_tool, args)


def _label_tool(args: argparse.Namespace) -> int:
    path = args.config_path or _prompt_csv_path()
    if not os.path.exists(path):
        print(f"Error: File '{path}' does not exist")
        return 1
    action = "Adding" if args.command == "apply" else "Removing"
    print(f"Starting {action.lower()} labels...")
    # The original removes every header key on delete, also where the cell is empty.
    opts = bulk.BulkOptions(
        action=bulk.Action(args.command),
        adopt=args.adopt,
        all_keys=args.command == "delete",
    )
    try:
        sheet = read_label_csv(path)
        api = api_client(
            ClusterOptions(args.kubeconfig, args.context, pool_size=max(32, args.concurrency))
        )
        plan = bulk.cluster_plan(api, sheet, opts)
        report = bulk.run(api, plan, concurrency=args.concurrency)
    except LabelerError as e:
        print(f"Error: {e}")
        return 1
    # A conflict left in place is a failure here: the original would have overwritten it.
    failed = {o.node: o.error or "" for o in report.failed}
    for node, conflicts in report.conflicted().items():
        reasons = (str(c).removeprefix(f"{node}: ") for c in conflicts)
        failed.setdefault(node, "; ".join(reasons))
    ok = [d.node for d in plan.diffs if not d.skipped and d.node not in failed]
    if not failed:
        if ok:
            print(f"{action} labels completed successfully!")
            print(f"Processed {len(ok)} nodes.")
        else:
            print("No valid nodes to process.")
        return 0
    print(f"{action} labels completed, but some nodes failed.")
    if ok:
        print(f"Successful nodes ({len(ok)}): {', '.join(ok)}")
    else:
        print("No successful nodes.")
    print(f"Failed nodes ({len(failed)}) and error messages:")
    for node in (d.node for d in plan.diffs if d.node in failed):
        print(f"  - {node}: {failed[node]}")
    return 1


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
        help="Number of frames per group (default: 12). This is used as divisor for "
        "calculating groupid from frame number.",
    )
    return parser


def lld_parser_main(argv: Sequence[str] | None = None) -> int:
    args = lld_parser_parser().parse_args(argv)
    setup_logging("warning")
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
        return 1
    output = args.output
    if not output:
        output = lld.default_output(source)
        print(f"Output file not specified, using default: {output}")
    tree = args.topotree_name or _answer("Please enter topotree name: ")
    if not tree:
        print("Error: Topotree name is required")
        return 1
    if args.group_per_rack <= 0:
        print(f"Error: group-per-rack must be a positive integer, got {args.group_per_rack}")
        return 1
    try:
        table = lld.read_lld(source, tree_name=tree, group_per_rack=args.group_per_rack)
        print(f"Target worksheet found: {table.sheet}")
        count = lld.write_lld_csv(table, output)
    except LabelerError as e:
        print(f"Error: {e}")
        print("Script execution failed")
        return 1
    print(f"CSV file successfully generated: {output}")
    print(f"Processed {count} rows of data")
    print(f"Topotree name: {tree}")
    print(f"Group per rack (divisor): {args.group_per_rack}")
    print("Script execution completed")
    return 0
