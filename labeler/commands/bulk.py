"""``apply``, ``delete``, ``plan``, ``export``, ``lld``: bulk labelling from CSV (issue 5)."""

from __future__ import annotations

import argparse
from typing import Any

from labeler.commands._base import placeholder


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    placeholder(sub, common, "apply", "label nodes from a CSV (MindCluster format)", 5)
    placeholder(sub, common, "delete", "remove the CSV's label keys from its nodes", 5)
    placeholder(sub, common, "plan", "show what apply would change; no writes", 5)
    placeholder(sub, common, "export", "write today's topology labels as a CSV", 5)
    placeholder(sub, common, "lld", "turn an Ascend LLD workbook into a label CSV", 5)
