"""``advise`` and ``domains``: Kueue TAS placement simulation (issue 8)."""

from __future__ import annotations

import argparse
from typing import Any

from labeler.commands._base import placeholder


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    placeholder(sub, common, "advise", "would a job fit, where, and at which level", 8)
    placeholder(sub, common, "domains", "free pod slots per topology domain", 8)
