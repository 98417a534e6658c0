"""``audit`` and ``placement``: nodes the schedulers cannot see (issue 7)."""

from __future__ import annotations

import argparse
from typing import Any

from labeler.commands._base import placeholder


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    placeholder(sub, common, "audit", "report and export metrics on unlabeled nodes", 7)
    placeholder(sub, common, "placement", "show where a job's pods landed, per level", 7)
