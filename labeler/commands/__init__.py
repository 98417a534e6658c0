"""Subcommands, one module per area; each has ``register(subparsers, common)``."""

from __future__ import annotations

from types import ModuleType

from labeler.commands import advise, agent, audit, bulk, generate
from labeler.commands import map as map_command

COMMAND_MODULES: tuple[ModuleType, ...] = (agent, bulk, generate, audit, advise, map_command)
