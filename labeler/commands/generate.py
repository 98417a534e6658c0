"""``generate`` and ``check``: scheduler configuration that matches the labels (issue 6)."""

from __future__ import annotations

import argparse
from typing import Any

from labeler.commands._base import placeholder


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    placeholder(sub, common, "generate", "emit Kueue/Volcano objects for a profile", 6)
    placeholder(sub, common, "check", "check nesting and completeness of node labels", 6)
