"""The ``topology-labeler`` command line: parsing, dispatch and error reporting.

Each subcommand lives in ``labeler/commands/<area>.py`` with a ``register`` function;
this module only wires them together and turns our typed errors into exit codes.

The same command line is installed twice: as ``topology-labeler`` and as the kubectl
plugin ``kubectl-topology`` (kubectl runs any ``kubectl-<name>`` on PATH for ``kubectl
<name> …``, with the arguments after the name). Only the program name in usage lines,
``--help`` and ``--version`` differs.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence

from labeler.base.errors import Exit, LabelerError, Terminated
from labeler.base.version import __version__
from labeler.commands import COMMANDS, command_modules

PROG = "topology-labeler"
# What a user types to run the kubectl plugin (the script is kubectl-topology).
PLUGIN_PROG = "kubectl topology"


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand accepts, after the subcommand name (like kubectl)."""
    from labeler.base.flags import duration, enum_flag  # not for the overview's --help
    from labeler.base.logs import LogFormat

    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("cluster and logging")
    g.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    g.add_argument("--context", help="kubeconfig context to use")
    g.add_argument(
        "--request-timeout",
        type=duration,
        metavar="DURATION",
        help="how long one answer of the API server may take, whole (30s, 2m; default "
        "60s); a slower one is retried like a lost one",
    )
    g.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    g.add_argument("--log-format", **enum_flag(LogFormat), default=LogFormat.TEXT)
    return common


def _top_level(
    prog: str,
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Keep GPU/NPU network-topology labels on Kubernetes nodes and emit the "
            "matching Kueue and Volcano configuration."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND", required=True)


def build_parser(command: str | None = None, prog: str = PROG) -> argparse.ArgumentParser:
    """The whole command line, or (given a command's name) only what that command needs."""
    parser, sub = _top_level(prog)
    common = common_options()
    for module in command_modules(command):
        module.register(sub, common)
    return parser


def overview_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The top level with each command's name and summary line but none of its flags: what
    ``--help``, ``--version`` and a missing or unknown command need, without importing any
    command module (the same text and errors as ``build_parser()``)."""
    parser, sub = _top_level(prog)
    for name, (_, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, add_help=False)
    return parser


def parse(argv: list[str], prog: str = PROG) -> argparse.Namespace:
    """Parse with the parser of the command the line starts with. Anything else goes to the
    overview, which prints the help or the usage error and exits; should it ever find a
    command further on, that command's own parser reads the line again."""
    if argv and argv[0] in COMMANDS:
        return build_parser(argv[0], prog).parse_args(argv)
    found, _ = overview_parser(prog).parse_known_args(argv)
    return build_parser(found.command, prog).parse_args(argv)


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    """Run one command line: ``argv``, or, as the process's entry point (the console
    scripts, ``python -m labeler``), the process's own arguments."""
    if argv is not None:
        return _run(parse(list(argv), prog), prog)
    # Start-up (our modules, the command's parser) makes objects that live as long as the
    # process; the collector would walk them for cycles again and again while the next
    # modules load (~2 ms of generate's start). So it waits until the line is parsed, and
    # what start-up made is frozen out of its sight before the command runs.
    gc.disable()
    try:
        args = parse(sys.argv[1:], prog)
        gc.freeze()
        gc.enable()
        return _run(args, prog)
    finally:
        # The process ends now. The interpreter's garbage collections at exit would walk
        # every object the command made (~10 ms after advise reads a snapshot, a tenth of
        # its run) to find cycles to free; nothing needs freeing by then (files are closed,
        # logging is shut down, threads have stopped), so they skip what exists.
        gc.freeze()


def _run(args: argparse.Namespace, prog: str) -> int:
    # Imported once the line is parsed: --help and usage errors print without them. The
    # logging package itself is loaded only if the command logs (labeler/base/logs.py).
    from labeler.base import logs
    from labeler.base.prog import invoked_as

    invoked_as(prog)  # messages that name a command name it as the user typed it

    logs.setup_logging(args.log_level, args.log_format)
    try:
        code: int = args.handler(args)
        return code
    except LabelerError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        return Exit.TERMINATED if isinstance(e, Terminated) else Exit.INTERRUPTED
    except BrokenPipeError:
        return Exit.OK
    finally:
        logs.shutdown()


def kubectl_plugin() -> int:
    """The ``kubectl-topology`` console script: ``kubectl topology advise …``."""
    return main(prog=PLUGIN_PROG)


if __name__ == "__main__":
    sys.exit(main())
