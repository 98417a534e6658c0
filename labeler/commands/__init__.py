"""Subcommands, one module per area; each has ``register(subparsers, common)``.

A command line builds the parser of its own command's module only, so a command does not
pay for importing the others (and what their flags' defaults import). The top-level
``--help`` (and anything that is not a known command) needs only each command's name and
summary line, which are in the table below, so it imports no command module at all.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# The modules under labeler/commands/ and the commands each one's register() adds, in the
# order --help lists them, with each command's summary: the line the top-level --help lists,
# and the first of its own --help. Plain dicts and tuples: the top-level --help imports
# nothing else, not even typing. tests/cli/test_flags.py keeps this in step with what the
# modules register, and with the help the full parser prints.
_SUMMARIES: dict[str, dict[str, str]] = {
    "agent": {"agent": "keep topology labels on this node (DaemonSet)"},
    "bulk": {
        "plan": "show what apply would change; no writes",
        "apply": "label nodes from a CSV (MindCluster format)",
        "delete": "remove the CSV's label keys from its nodes",
        "export": "write today's topology labels as a CSV",
        "lld": "turn an Ascend LLD workbook into a label CSV",
    },
    "generate": {
        "generate": "emit Kueue/Volcano objects that match the labels",
        "check": "check nesting and completeness of node labels",
    },
    "audit": {
        "audit": "report (or export as Prometheus metrics) the nodes topology-aware schedulers "
        "cannot use: labeled / partial / unlabeled / inconsistent",
        "placement": "show where a job's pods landed: each pod's node and its domain at every "
        "level",
    },
    "advise": {
        "advise": "would a job fit now, where, and at which topology level",
        "domains": "free pod slots per topology domain, per level",
    },
    "map": {
        "map": "draw the topology as one self-contained HTML page: nested domains, node "
        "states, free accelerators, nodes outside the topology",
    },
}
MODULES = tuple(_SUMMARIES)
# Command → (its module, its summary).
COMMANDS = {
    name: (module, summary)
    for module, commands in _SUMMARIES.items()
    for name, summary in commands.items()
}


def command_modules(command: str | None = None) -> list[ModuleType]:
    """The module that registers ``command``, or every module."""
    names = (COMMANDS[command][0],) if command in COMMANDS else MODULES
    return [importlib.import_module(f"labeler.commands.{name}") for name in names]
