"""make_source: the agent's source comes from the profile, built from the source's own
settings (what its flag group parsed); unknown sources and settings say what exists."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from labeler.base.errors import UsageError
from labeler.commands.agent import add_source_flags, source_settings
from labeler.core.profiles import Profile, ascend_superpod, load_profile, oci_rdma
from labeler.sources import ascend, azure, gce, nvlink, oci_imds
from labeler.sources.ascend import AscendSource, NpuSmiReader
from labeler.sources.metadata_http import HttpOptions
from labeler.sources.oci_imds import ImdsOptions, OciImdsSource
from labeler.sources.select import KINDS, make_source

IMDS = {"oci-imds": {"url": "http://127.0.0.1:9", "timeout": 0.5, "attempts": 2}}


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_source_flags(parser)
    return parser.parse_args(list(argv))


def test_oci_rdma_gets_the_imds_source_with_its_settings() -> None:
    src = make_source(oci_rdma(), IMDS)
    assert isinstance(src, OciImdsSource)
    assert src.options == ImdsOptions(url="http://127.0.0.1:9", timeout=0.5, attempts=2)


def test_the_flags_defaults_are_the_options_defaults() -> None:
    # One home for every default: the options dataclass. The IMDS timeout is a 5 s deadline
    # per document, retries included, as agent --help says.
    settings = source_settings(parse())
    for kind in KINDS:
        for field, value in settings[kind.name].items():
            assert getattr(kind.defaults, field) == value, (kind.name, field)
    assert ImdsOptions().timeout == 5.0
    src = make_source(oci_rdma(), settings)
    assert isinstance(src, OciImdsSource) and src.options == ImdsOptions()


def test_what_a_flag_group_parses_is_its_sources_settings_and_nothing_else() -> None:
    flags = parse("--gce-metadata-url", "http://127.0.0.1:9", "--gce-metadata-attempts", "1")
    settings = source_settings(flags)
    assert settings["gce-metadata"] == {"url": "http://127.0.0.1:9", "timeout": 5.0, "attempts": 1}
    assert settings["azure-imds"]["url"] == HttpOptions().url
    src = make_source(load_profile("gce"), settings)
    assert isinstance(src, gce.GceSource)
    assert src.options == HttpOptions(url="http://127.0.0.1:9", attempts=1)


def test_ascend_settings_reach_the_reader() -> None:
    flags = parse(
        "--ascend-reader", "npu-smi", "--npu-smi", "/opt/npu-smi", "--npu-smi-timeout", "3"
    )
    src = make_source(ascend_superpod(), source_settings(flags))
    assert isinstance(src, AscendSource) and isinstance(src.reader, NpuSmiReader)
    assert (src.reader.path, src.reader.timeout) == ("/opt/npu-smi", 3.0)


@pytest.mark.parametrize(
    "argv",
    [
        ["--imds-timeout", "0"],
        ["--npu-smi-timeout", "-1"],
        ["--imds-attempts", "0"],
        ["--gce-metadata-attempts", "two"],
        ["--ascend-reader", "ioctl"],
    ],
)
def test_a_bad_flag_value_is_a_usage_error_naming_the_flag(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse(*argv)
    assert exit_info.value.code == 2
    assert f"argument {argv[0]}" in capsys.readouterr().err


def test_a_setting_the_source_does_not_have_is_a_usage_error_listing_its_settings() -> None:
    with pytest.raises(UsageError, match=r"oci-imds has no setting retries; .*attempts"):
        make_source(oci_rdma(), {"oci-imds": {"retries": 3}})


def test_every_source_is_registered_once_with_its_own_flag_group() -> None:
    assert [k.name for k in KINDS] == [
        oci_imds.NAME,
        ascend.NAME,
        gce.NAME,
        azure.NAME,
        nvlink.NAME,
    ]
    parser = argparse.ArgumentParser()
    add_source_flags(parser)
    titles = [g.title for g in parser._action_groups]
    assert "OCI instance metadata (source oci-imds)" in titles
    assert "Ascend NPU driver (source ascend, profile ascend-superpod)" in titles
    assert "GCE metadata server (source gce-metadata)" in titles
    assert "Azure instance metadata (source azure-imds)" in titles
    assert "NVLink clique (source nvidia-smi)" in titles


def test_the_three_metadata_sources_share_one_shell_of_three_flags() -> None:
    for kind, prefix in ((oci_imds.KIND, "imds"), (gce.KIND, "gce-metadata")):
        names = [f.name for f in kind.flags][:3]
        assert names == [f"--{prefix}-url", f"--{prefix}-timeout", f"--{prefix}-attempts"]
    assert [f.field for f in azure.KIND.flags] == ["url", "timeout", "attempts"]


def test_azure_profile_gets_the_imds_source_with_its_flags() -> None:
    flags = parse("--azure-imds-url", "http://127.0.0.1:9", "--azure-imds-timeout", "2")
    src = make_source(load_profile("azure"), source_settings(flags))
    assert isinstance(src, azure.AzureSource)
    assert src.options == HttpOptions(url="http://127.0.0.1:9", timeout=2.0)


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
    src = make_source(profile, IMDS)
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
        make_source(profile, IMDS)


def test_a_source_the_agent_cannot_read_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: s\nsource: static\nlevels: [{key: ex.com/a, name: a}]\n")
    with pytest.raises(UsageError, match=r"source 'static'.*agent sources:.*oci-imds"):
        make_source(load_profile(str(path)), IMDS)
