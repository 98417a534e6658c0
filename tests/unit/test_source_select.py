"""make_source: the agent's source comes from the profile, built from the source's own
flags; unknown sources say what exists."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from labeler.base.errors import UsageError
from labeler.core.profiles import Profile, ascend_superpod, load_profile, oci_rdma
from labeler.sources import ascend, azure, gce, nvlink, oci_imds
from labeler.sources.ascend import AscendOptions, AscendSource, NpuSmiReader
from labeler.sources.oci_imds import ImdsOptions, OciImdsSource
from labeler.sources.select import KINDS, add_flags, make_source


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return parser.parse_args(list(argv))


def args(**kw: object) -> argparse.Namespace:
    base = {
        "imds_url": "http://127.0.0.1:9",
        "imds_timeout": 0.5,
        "imds_attempts": 2,
        "tray_index_file": None,
    }
    return argparse.Namespace(**{**base, **kw})


def test_oci_rdma_gets_the_imds_source_with_the_flags() -> None:
    src = make_source(oci_rdma(), args())
    assert isinstance(src, OciImdsSource)
    assert src.options == ImdsOptions(url="http://127.0.0.1:9", timeout=0.5, attempts=2)


def test_the_flags_defaults_are_the_options_defaults() -> None:
    # One home for every default: the options dataclass. The IMDS timeout is a 5 s deadline
    # per document, retries included, as agent --help says.
    got = parse()
    assert ImdsOptions.from_args(got) == ImdsOptions()
    assert ImdsOptions().timeout == 5.0
    assert AscendOptions.from_args(got) == AscendOptions()
    assert gce.GceOptions.from_args(got) == gce.GceOptions()


def test_gce_profile_gets_the_metadata_source_with_its_flags() -> None:
    flags = parse("--gce-metadata-url", "http://127.0.0.1:9", "--gce-metadata-attempts", "1")
    src = make_source(load_profile("gce"), flags)
    assert isinstance(src, gce.GceSource)
    assert (src.options.url, src.options.attempts) == ("http://127.0.0.1:9", 1)
    with pytest.raises(UsageError, match="--gce-metadata-attempts must be at least 1"):
        make_source(load_profile("gce"), parse("--gce-metadata-attempts", "0"))


def test_ascend_flags_reach_the_reader() -> None:
    flags = parse(
        "--ascend-reader", "npu-smi", "--npu-smi", "/opt/npu-smi", "--npu-smi-timeout", "3"
    )
    src = make_source(ascend_superpod(), flags)
    assert isinstance(src, AscendSource) and isinstance(src.reader, NpuSmiReader)
    assert (src.reader.path, src.reader.timeout) == ("/opt/npu-smi", 3.0)


@pytest.mark.parametrize("argv", [["--imds-timeout", "0"], ["--npu-smi-timeout", "-1"]])
def test_a_timeout_that_is_not_positive_is_a_usage_error(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse(*argv)
    assert exit_info.value.code == 2


def test_imds_attempts_below_one_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--imds-attempts must be at least 1"):
        make_source(oci_rdma(), args(imds_attempts=0))


def test_every_source_is_registered_once_with_its_own_flag_group() -> None:
    assert [k.name for k in KINDS] == [
        oci_imds.NAME,
        ascend.NAME,
        gce.NAME,
        azure.NAME,
        nvlink.NAME,
    ]
    parser = argparse.ArgumentParser()
    add_flags(parser)
    titles = [g.title for g in parser._action_groups]
    assert "OCI instance metadata (source oci-imds)" in titles
    assert "Ascend NPU driver (source ascend, profile ascend-superpod)" in titles
    assert "GCE metadata server (source gce-metadata)" in titles
    assert "Azure instance metadata (source azure-imds)" in titles


def test_azure_profile_gets_the_imds_source_with_its_flags() -> None:
    flags = parse("--azure-imds-url", "http://127.0.0.1:9", "--azure-imds-timeout", "2")
    src = make_source(load_profile("azure"), flags)
    assert isinstance(src, azure.AzureSource)
    assert src.options == azure.AzureOptions(url="http://127.0.0.1:9", timeout=2.0)
    assert azure.AzureOptions.from_args(parse()) == azure.AzureOptions()


def test_a_profile_file_renames_the_keys(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: mine\nsource: oci-imds\nlevels:\n"
        "  - {key: ex.com/island, name: hpc_island}\n"
        "  - {key: ex.com/block, name: network_block}\n"
        "  - {key: ex.com/rack, name: local_block}\n"
        "extraLabels: [ex.com/host]\n"
    )
    profile = load_profile(str(path))
    src = make_source(profile, args())
    assert list(profile.keys_for(src.roles).values()) == [
        "ex.com/island",
        "ex.com/block",
        "ex.com/rack",
        "ex.com/host",
    ]


def test_a_profile_the_source_cannot_take_fails_before_any_api_call() -> None:
    extra = tuple(f"a/{i}" for i in range(7))
    profile = Profile("flat", oci_rdma().topology, extra_keys=extra, source="oci-imds")
    with pytest.raises(UsageError, match="at most 6 extra label"):
        make_source(profile, args())


def test_a_source_the_agent_cannot_read_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: s\nsource: static\nlevels: [{key: ex.com/a, name: a}]\n")
    with pytest.raises(UsageError, match=r"source 'static'.*agent sources:.*oci-imds"):
        make_source(load_profile(str(path)), args())
