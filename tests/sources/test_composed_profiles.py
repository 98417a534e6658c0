"""Profiles whose levels come from several sources: per-level ``source``, the parts each
source sees, and the built-in oci-rdma-nvlink and gce-nvlink."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.agent.decide import unknown_labels
from labeler.base.errors import InputError
from labeler.core.profiles import GCE_SUBBLOCK, NVIDIA_CLIQUE, OCI_HOST_ID, Roles, load_profile
from labeler.sources import NoData, Reading, nvlink, oci_imds
from labeler.sources.compose import ComposedSource
from labeler.sources.nvlink import CLIQUE, PENDING
from labeler.sources.select import make_source


@pytest.mark.parametrize("name", ["oci-rdma-nvlink", "gce-nvlink"])
def test_builtin_composed_profiles_take_every_level_across_sources(name: str) -> None:
    profile = load_profile(name)
    src = make_source(profile)
    assert isinstance(src, ComposedSource)
    keys = profile.keys_for(src.roles)
    assert set(profile.level_keys) <= set(keys.values())
    (block,) = [lv for lv in profile.topology.levels if lv.block]
    assert block.key == NVIDIA_CLIQUE and block.source == "nvidia-smi"


def test_oci_host_is_the_narrowest_level_and_no_longer_an_extra() -> None:
    profile = load_profile("oci-rdma-nvlink")
    assert profile.level_keys[-2:] == (NVIDIA_CLIQUE, OCI_HOST_ID)
    assert OCI_HOST_ID not in profile.extra_keys
    assert profile.sources == ("oci-imds", "nvidia-smi")
    assert profile.part("nvidia-smi").level_keys == (NVIDIA_CLIQUE,)


def test_a_profile_file_names_a_source_per_level(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: mine\nsource: gce-metadata\nencoding: raw\nlevels:\n"
        f"  - {{key: {GCE_SUBBLOCK}, name: subblock}}\n"
        "  - {key: ex.com/clique, name: nvlink_clique, source: nvidia-smi, block: true}\n"
    )
    profile = load_profile(str(path))
    assert profile.sources == ("gce-metadata", "nvidia-smi")
    src = make_source(profile)
    assert profile.keys_for(src.roles)["nvlink_clique"] == "ex.com/clique"


def test_an_unknown_level_source_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: m\nsource: oci-imds\nlevels:\n  - {key: ex.com/a, source: nope}\n")
    with pytest.raises(InputError, match="source 'nope'"):
        load_profile(str(path))


class Fixed:
    """A source that always answers the same."""

    def __init__(self, name: str, roles: Roles, answer: Reading | NoData) -> None:
        self.name, self.roles, self.answer = name, roles, answer

    def read(self) -> Reading | NoData:
        return self.answer


def test_a_pending_fabric_leaves_the_clique_and_the_host_under_it_unknown_with_causes() -> None:
    profile = load_profile("oci-rdma-nvlink")
    ids = {"hpc_island": "i", "network_block": "n", "local_block": "l", "host": "h"}
    pending = Reading(ids={}, unknown={CLIQUE: "GPU 3 is 'In Progress'"}, causes={CLIQUE: PENDING})
    parts = [
        (profile.part("oci-imds"), Fixed("oci-imds", oci_imds.ROLES, Reading(ids=ids))),
        (profile.part("nvidia-smi"), Fixed("nvidia-smi", nvlink.ROLES, pending)),
    ]
    src = ComposedSource(profile, parts)
    got = src.read()
    assert isinstance(got, Reading)
    assert set(got.unknown) == {CLIQUE, "host"} and "host" not in got.ids
    keys = profile.keys_for(src.roles)
    assert unknown_labels(src.roles, got, keys) == {
        NVIDIA_CLIQUE: (PENDING, "GPU 3 is 'In Progress'"),
        OCI_HOST_ID: (
            "wider-unknown",
            f"a wider level is unknown ({CLIQUE}: GPU 3 is 'In Progress')",
        ),
    }
    # A source with no data: its levels are unknown with that cause.
    parts[1] = (profile.part("nvidia-smi"), Fixed("nvidia-smi", nvlink.ROLES, NoData("no GPU")))
    got = ComposedSource(profile, parts).read()
    assert isinstance(got, Reading) and got.causes == {CLIQUE: "no-data"}
