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
import logging
import sys
from collections.abc import Sequence

from labeler.base.errors import Exit, LabelerError, Terminated
from labeler.base.logs import setup_logging
from labeler.base.prog import PLUGIN_PROG, PROG, invoked_as
from labeler.base.version import __version__
from labeler.commands import command_modules


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand accepts, after the subcommand name (like kubectl)."""
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("cluster and logging")
    g.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    g.add_argument("--context", help="kubeconfig context to use")
    g.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    g.add_argument("--log-format", default="text", choices=["text", "json"])
    return common


def build_parser(command: str | None = None, prog: str = PROG) -> argparse.ArgumentParser:
    """The whole command line, or (given a command's name) only what that command needs."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Keep GPU/NPU network-topology labels on Kubernetes nodes and emit the "
            "matching Kueue and Volcano configuration."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = common_options()
    for module in command_modules(command):
        module.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    invoked_as(prog)  # messages that name a command name it as the user typed it
    parser = build_parser(argv[0] if argv else None, prog)
    args = parser.parse_args(argv)
    setup_logging(args.log_level, args.log_format)
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
        logging.shutdown()


def kubectl_plugin() -> int:
    """The ``kubectl-topology`` console script: ``kubectl topology advise …``."""
    return main(prog=PLUGIN_PROG)


if __name__ == "__main__":
    sys.exit(main())
