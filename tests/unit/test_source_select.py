"""make_source: the agent's source comes from the profile; unknown sources say what exists."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from labeler.errors import UsageError
from labeler.profiles import load_profile, oci_rdma
from labeler.sources.oci_imds import DEFAULT_KEYS, OciImdsSource
from labeler.sources.select import make_source


def args(**kw: object) -> argparse.Namespace:
    base = {"imds_url": "http://127.0.0.1:9", "imds_timeout": 0.5, "imds_attempts": 2}
    return argparse.Namespace(**{**base, **kw})


def test_oci_rdma_gets_the_imds_source_with_the_flags() -> None:
    src = make_source(oci_rdma(), args())
    assert isinstance(src, OciImdsSource)
    assert src.keys == DEFAULT_KEYS.all
    assert src.options.url == "http://127.0.0.1:9"
    assert src.options.read_timeout == 0.5 and src.options.attempts == 2


def test_a_profile_file_renames_the_keys(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: mine\nsource: oci-imds\nlevels:\n"
        "  - {key: ex.com/island, name: hpc_island}\n"
        "  - {key: ex.com/block, name: network_block}\n"
        "  - {key: ex.com/rack, name: local_block}\n"
        "extraLabels: [ex.com/host]\n"
    )
    src = make_source(load_profile(str(path)), args())
    assert src.keys == ("ex.com/island", "ex.com/block", "ex.com/rack", "ex.com/host")


def test_a_source_the_agent_cannot_read_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: s\nsource: static\nlevels: [{key: ex.com/a, name: a}]\n")
    with pytest.raises(UsageError, match=r"source 'static'.*agent sources:.*oci-imds"):
        make_source(load_profile(str(path)), args())
