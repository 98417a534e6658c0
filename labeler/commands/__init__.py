"""Subcommands, one module per area; each has ``register(subparsers, common)``.

A command line builds the parser of its own command's module only, so a command does not
pay for importing the others (and what their flags' defaults import); ``--help`` and
anything that is not a known command build them all.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# The modules under labeler/commands/, in the order --help lists their commands.
MODULES = ("agent", "bulk", "generate", "audit", "advise", "map")

# Command name → the module whose register() adds it (tests/cli/test_flags.py keeps this
# in step with the modules).
COMMANDS = {
    "agent": "agent",
    "plan": "bulk",
    "apply": "bulk",
    "delete": "bulk",
    "export": "bulk",
    "lld": "bulk",
    "generate": "generate",
    "check": "generate",
    "audit": "audit",
    "placement": "audit",
    "advise": "advise",
    "domains": "advise",
    "map": "map",
}


def command_modules(command: str | None = None) -> list[ModuleType]:
    """The module that registers ``command``, or every module."""
    names = (COMMANDS[command],) if command in COMMANDS else MODULES
    return [importlib.import_module(f"labeler.commands.{name}") for name in names]
