"""The NVLink clique source: GFD's rule over nvidia-smi's CSV, against a fake nvidia-smi."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.core.profiles import NVIDIA_CLIQUE, nvlink
from labeler.sources import NoData, Reading, SourceError
from labeler.sources.nvlink import (
    CLIQUE,
    MAX_OUTPUT_BYTES,
    QUERY,
    ROLES,
    NvlinkOptions,
    NvlinkSource,
    parse_cliques,
)
from tests.sources.nvidia_fakes import TRAY, UUID, FakeNvidiaSmi

CLIQUE_VALUE = UUID.lower() + ".32766"
ZERO = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def smi(tmp_path: Path) -> FakeNvidiaSmi:
    return FakeNvidiaSmi(tmp_path / "bin")


def source(smi: FakeNvidiaSmi, timeout: float = 10.0) -> NvlinkSource:
    return NvlinkSource(NvlinkOptions(path=str(smi.path), timeout=timeout))


def test_every_gpu_on_one_clique_is_the_value_gfd_writes(smi: FakeNvidiaSmi) -> None:
    got = source(smi).read()
    # The UUID lowercase, a dot, the clique ID: nvidia.com/gpu.clique as GFD writes it.
    assert got == Reading(ids={}, values={CLIQUE: CLIQUE_VALUE}, details={"source": "nvidia-smi"})
    assert smi.calls() == [" ".join(QUERY)]


@pytest.mark.parametrize(
    "text",
    [
        f"{UUID}, 7\n[N/A], [N/A]\n",
        f"N/A, N/A\n{UUID}, 7\n",
        f"{ZERO}, 0\n{UUID}, 7\n",  # a GPU whose fabric is not registered yet
        f"{UUID}, 7\n{UUID.lower()}, 07\n\n",
    ],
)
def test_only_fabric_attached_gpus_count(text: str) -> None:
    got = parse_cliques(text)
    assert isinstance(got, Reading) and got.values == {CLIQUE: UUID.lower() + ".7"}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "no GPU of 0"),
        ("[N/A], [N/A]\n[N/A], [N/A]\n", "no GPU of 2"),
        (f"{ZERO}, 0\n", "no GPU of 1"),
        (f"{UUID}, 1\n{UUID}, 2\n", "2 NVLink cliques"),
        (f"{UUID}, 1\n{UUID[:-1]}E, 1\n", "2 NVLink cliques"),
    ],
)
def test_no_fabric_or_gpus_that_disagree_is_no_data(text: str, why: str) -> None:
    got = parse_cliques(text)
    assert isinstance(got, NoData) and why in got.reason


@pytest.mark.parametrize(
    "text", ["a, b, c\n", f"{UUID}\n", "not-a-uuid, 3\n", f"{UUID}, -1\n", f"{UUID}, x\n"]
)
def test_lines_of_another_shape_are_errors(text: str) -> None:
    with pytest.raises(SourceError, match="nvidia-smi line 1"):
        parse_cliques(text)


def test_a_failing_nvidia_smi_is_an_error_that_says_what_it_printed(smi: FakeNvidiaSmi) -> None:
    smi.set("", code=9, stderr="NVIDIA-SMI has failed because it couldn't communicate")
    with pytest.raises(SourceError, match="exited with 9: NVIDIA-SMI has failed"):
        source(smi).read()


def test_a_hung_nvidia_smi_is_a_timeout_error(smi: FakeNvidiaSmi) -> None:
    smi.set(sleep=30)
    with pytest.raises(SourceError, match=r"--nvidia-smi-timeout 0\.5s"):
        source(smi, timeout=0.5).read()


def test_a_flood_of_output_is_an_error_not_memory(smi: FakeNvidiaSmi) -> None:
    smi.set(TRAY, repeat=MAX_OUTPUT_BYTES // len(TRAY) + 1)
    with pytest.raises(SourceError, match=f"more than {MAX_OUTPUT_BYTES} bytes"):
        source(smi).read()


def test_a_missing_nvidia_smi_names_the_flag(tmp_path: Path) -> None:
    src = NvlinkSource(NvlinkOptions(path=str(tmp_path / "nope")))
    with pytest.raises(SourceError, match="--nvidia-smi PATH"):
        src.read()


def test_found_on_path_by_name(smi: FakeNvidiaSmi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", smi.env()["PATH"])
    got = NvlinkSource().read()
    assert isinstance(got, Reading) and got.values[CLIQUE] == CLIQUE_VALUE


def test_the_nvlink_profile_writes_gfds_key_as_the_block_level() -> None:
    profile = nvlink()
    assert profile.keys_for(ROLES) == {CLIQUE: NVIDIA_CLIQUE}
    assert profile.topology.levels[0].block is True
