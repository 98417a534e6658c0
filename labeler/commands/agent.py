"""``agent``: the per-node DaemonSet loop (issue 3)."""

from __future__ import annotations

import argparse
from typing import Any

from labeler.commands._base import placeholder


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    placeholder(sub, common, "agent", "keep topology labels on this node (DaemonSet)", 3)
