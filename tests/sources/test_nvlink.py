"""The NVLink clique source: GFD's and the DRA driver's rule over nvidia-smi's CSV, with
every counted GPU's fabric registration complete, against a fake nvidia-smi."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.core.profiles import NVIDIA_CLIQUE, nvlink
from labeler.sources import NoData, Reading, SourceError
from labeler.sources.nvlink import (
    CLIQUE,
    FAILED,
    MAX_OUTPUT_BYTES,
    PENDING,
    QUERY,
    ROLES,
    NvlinkOptions,
    NvlinkSource,
    parse_cliques,
)
from tests.sources.nvidia_fakes import (
    FABRIC_FIELDS,
    NO_FABRIC,
    TRAY_TEXT,
    UUID,
    FakeNvidiaSmi,
    gpu,
)

CLIQUE_VALUE = UUID.lower() + ".32766"
ZERO = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def smi(tmp_path: Path) -> FakeNvidiaSmi:
    return FakeNvidiaSmi(tmp_path / "bin")


def source(smi: FakeNvidiaSmi, timeout: float = 10.0) -> NvlinkSource:
    return NvlinkSource(NvlinkOptions(path=str(smi.path), timeout=timeout))


def read(smi: FakeNvidiaSmi, *gpus: dict[str, str]) -> Reading | NoData:
    return source(smi.set(gpus)).read()


def test_every_gpu_registered_on_one_clique_is_the_value_gfd_and_the_dra_driver_write(
    smi: FakeNvidiaSmi,
) -> None:
    got = source(smi).read()
    # The UUID lowercase, a dot, the clique ID: nvidia.com/gpu.clique as both write it.
    assert got == Reading(ids={}, values={CLIQUE: CLIQUE_VALUE}, details={"source": "nvidia-smi"})
    assert smi.calls() == [" ".join(QUERY)]
    assert QUERY[0] == "--query-gpu=" + ",".join(FABRIC_FIELDS)


@pytest.mark.parametrize(
    "gpus",
    [
        [gpu(clique="7"), NO_FABRIC],
        [{f: "N/A" for f in FABRIC_FIELDS}, gpu(clique="7")],
        [gpu(ZERO, "0"), gpu(clique="7")],  # registered, NVLink inside the node only
        [gpu(clique="7"), gpu(UUID.lower(), "07")],
    ],
)
def test_only_gpus_on_a_multi_node_fabric_count(
    smi: FakeNvidiaSmi, gpus: list[dict[str, str]]
) -> None:
    got = read(smi, *gpus)
    assert isinstance(got, Reading) and got.values == {CLIQUE: UUID.lower() + ".7"}


@pytest.mark.parametrize(
    ("gpus", "cause", "why"),
    [
        # The DRA driver's strict rule (getCliqueIDStrict): a GPU whose fabric is supported
        # must have completed its registration, and with success.
        ([gpu(), gpu("[N/A]", "[N/A]", "In Progress", "[N/A]")], PENDING, "GPU 1 is 'In Progress'"),
        ([gpu("N/A", "N/A", "Not Started", "N/A"), gpu()], PENDING, "GPU 0 is 'Not Started'"),
        ([gpu(), gpu(status="Unknown Error")], FAILED, "GPU 1 failed ('Unknown Error')"),
        ([gpu(state="In Progress"), gpu(status="Timeout")], FAILED, "2 of 2 GPUs"),
        ([gpu(ZERO, "0", "In Progress", "N/A")], PENDING, "1 of 1 GPUs"),
    ],
)
def test_a_gpu_not_registered_yet_or_failed_makes_the_clique_unknown_not_guessed(
    smi: FakeNvidiaSmi, gpus: list[dict[str, str]], cause: str, why: str
) -> None:
    # The GPUs that did register may not be all of this node's: no value is written, and
    # none is removed, until every one has.
    got = read(smi, *gpus)
    assert isinstance(got, Reading)
    assert got.values == {} and got.ids == {}
    assert why in got.unknown[CLIQUE] and "kept as it is" in got.unknown[CLIQUE]
    assert got.causes == {CLIQUE: cause}


@pytest.mark.parametrize(
    ("gpus", "why"),
    [
        ([], "no GPU of 0"),
        ([NO_FABRIC, NO_FABRIC], "no GPU of 2"),
        ([gpu(ZERO, "0")], "no GPU of 1"),
        ([gpu(clique="1"), gpu(clique="2")], "2 NVLink cliques"),
        ([gpu(clique="1"), gpu(UUID[:-1] + "E", "1")], "2 NVLink cliques"),
    ],
)
def test_no_fabric_or_gpus_that_disagree_is_no_data(
    smi: FakeNvidiaSmi, gpus: list[dict[str, str]], why: str
) -> None:
    got = read(smi, *gpus)
    assert isinstance(got, NoData) and why in got.reason


@pytest.mark.parametrize(
    "text",
    [
        "a, b, c\n",
        f"{UUID}, 1\n",  # the two fields of an older query
        "not-a-uuid, 3, Completed, Success\n",
        f"{UUID}, -1, Completed, Success\n",
        f"{UUID}, x, Completed, Success\n",
    ],
)
def test_lines_of_another_shape_are_errors(text: str) -> None:
    with pytest.raises(SourceError, match="nvidia-smi line 1"):
        parse_cliques(text)


def test_an_nvidia_smi_without_the_fabric_state_fields_is_an_error_naming_them(
    tmp_path: Path,
) -> None:
    old = FakeNvidiaSmi(tmp_path / "old", known=FABRIC_FIELDS[:2])
    with pytest.raises(SourceError, match=r'exited with 2: Field "fabric\.state" is not a valid'):
        source(old).read()


def test_a_failing_nvidia_smi_is_an_error_that_says_what_it_printed(smi: FakeNvidiaSmi) -> None:
    smi.set(stdout="", code=9, stderr="NVIDIA-SMI has failed because it couldn't communicate")
    with pytest.raises(SourceError, match="exited with 9: NVIDIA-SMI has failed"):
        source(smi).read()


def test_a_hung_nvidia_smi_is_a_timeout_error(smi: FakeNvidiaSmi) -> None:
    smi.set(sleep=30)
    with pytest.raises(SourceError, match=r"--nvidia-smi-timeout 0\.5s"):
        source(smi, timeout=0.5).read()


def test_a_flood_of_output_is_an_error_not_memory(smi: FakeNvidiaSmi) -> None:
    smi.set(stdout=TRAY_TEXT, repeat=MAX_OUTPUT_BYTES // len(TRAY_TEXT) + 1)
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
