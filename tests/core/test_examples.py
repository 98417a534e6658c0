"""The example CSVs (the README's examples, docs/profiles.md) are valid and nest."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from labeler.core.profiles import load_profile
from labeler.core.sheet import read_label_csv

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("name", "profile"),
    [
        ("oci-cluster.csv", "oci-rdma"),
        ("ascend-cluster.csv", "ascend-superpod"),
        ("dc-cluster.csv", "profile-dc.yaml"),
        ("gb200-cluster.csv", "profile-oci-gb200.yaml"),
    ],
)
def test_example_is_valid_and_levels_nest(name: str, profile: str) -> None:
    sheet = read_label_csv(EXAMPLES / name)
    spec = str(EXAMPLES / profile) if profile.endswith(".yaml") else profile
    levels = load_profile(spec).level_keys
    assert set(levels) <= set(sheet.keys)
    for wide, narrow in itertools.pairwise(levels):
        parents: dict[str, set[str]] = {}
        for row in sheet.rows:
            parents.setdefault(row.values[narrow], set()).add(row.values[wide])
        assert all(len(p) == 1 for p in parents.values()), (wide, narrow, parents)
