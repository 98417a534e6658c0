"""The Ascend SuperPoD source: both readers against fakes of the driver, and the label rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.base.errors import UsageError
from labeler.core.profiles import (
    ASCEND_GROUP,
    ASCEND_RACK,
    ASCEND_SERVER,
    ASCEND_SUPERPOD,
    ascend_superpod,
    check_tree_name,
)
from labeler.sources import NoData, Reading, SourceError
from labeler.sources.ascend import (
    RACK,
    SERVER,
    SUPERPOD,
    AscendSource,
    AutoReader,
    DcmiReader,
    NpuSmiReader,
    SpodInfo,
    make_reader,
    reading_from,
)
from labeler.sources.ascend.npusmi import parse_list, parse_map, parse_spod
from labeler.sources.ascend.spod import (
    AscendBadOutput,
    AscendCommandFailed,
    AscendNoDevice,
    AscendTimeout,
    AscendToolMissing,
)
from tests.sources.ascend_fakes import FakeNpuSmi

# ---------------------------------------------------------------- parsing real formats

MAP_910B = (
    "\tNPU ID                         Chip ID                        Chip Logic ID"
    "                  Chip Name                     \n"
    "\t0                              0                              0"
    "                              Ascend 910B3\n"
    "\t0                              1                              -"
    "                              Mcu                           \n"
    "\t1                              0                              1"
    "                              Ascend 910B3\n"
)

MAP_WITH_PHY = (
    "NPU ID Chip ID Chip Logic ID Chip Phy-ID Chip Name\n"
    "0 0 0 0 Ascend910\n0 1 1 1 Ascend910\n0 2 - - Mcu\n"
)


def test_map_skips_mcu_rows_and_keeps_chip_ids() -> None:
    assert [(c.npu, c.chip) for c in parse_map(MAP_910B)] == [(0, 0), (1, 0)]
    assert [(c.npu, c.chip) for c in parse_map(MAP_WITH_PHY)] == [(0, 0), (0, 1)]


def test_map_garbage_is_a_typed_error() -> None:
    with pytest.raises(AscendBadOutput, match="no device table"):
        parse_map("dcmi model initialized failed, because the device is used. ret is -8020")


def test_list_expands_chip_count() -> None:
    text = "\tTotal Count : 2\n\n\tNPU ID : 4\n\tChip Count : 2\n\n\tNPU ID : 5\n\tChip Count : 1\n"
    assert [(c.npu, c.chip) for c in parse_list(text)] == [(4, 0), (4, 1), (5, 0)]


def test_spod_parses_documented_lines() -> None:
    text = "SDID : 16777216\nSuper Pod Size : 384\nSuper Pod ID : 0\nServer Index : 4\n"
    info = parse_spod(text, "npu 0 chip 0")
    assert (info.sdid, info.super_pod_size, info.super_pod_id, info.server_index) == (
        16777216,
        384,
        0,
        4,
    )
    assert info.chassis_id is None and info.super_pod_type is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Super Pod ID : N/A\nServer Index : 1\nSDID : 1\nSuper Pod Size : 1\n", "not a number"),
        ("SDID : 1\nSuper Pod Size : 2\n", "lacks super pod id, server index"),
        ("", "lacks sdid"),
    ],
)
def test_spod_garbage_names_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(AscendBadOutput, match=message):
        parse_spod(text, "npu 3 chip 1")


# ---------------------------------------------------------------- the label rule


def info(**kw: int | None) -> SpodInfo:
    base: dict[str, int | None] = {
        "sdid": 1,
        "super_pod_size": 384,
        "super_pod_id": 12,
        "server_index": 40,
    }
    base.update(kw)
    return SpodInfo(device="npu 0 chip 0", **base)  # type: ignore[arg-type]


def test_a3_labels_superpod_and_tree_only() -> None:
    r = reading_from(info(chassis_id=0, super_pod_type=0))
    assert isinstance(r, Reading)
    assert dict(r.ids) == {SUPERPOD: "12"}
    assert r.details["generation"] == "a3"


@pytest.mark.parametrize("pod_type", [1, 2])
def test_a5_pod_types_add_rack_and_server(pod_type: int) -> None:
    r = reading_from(info(chassis_id=3, super_pod_type=pod_type))
    assert isinstance(r, Reading)
    assert dict(r.ids) == {
        SUPERPOD: "12",
        RACK: "3",
        SERVER: "40",
    }


def test_forced_a5_server_type_gets_serverid_but_no_rackid() -> None:
    r = reading_from(info(chassis_id=3, super_pod_type=0), generation="a5")
    assert isinstance(r, Reading)
    assert SERVER in r.ids and RACK not in r.ids
    assert "not a 1D/2D pod" in r.details["rackid"]


def test_forced_a5_with_npu_smi_chassis_but_no_type_labels_rack() -> None:
    r = reading_from(info(chassis_id=5), generation="a5")
    assert isinstance(r, Reading) and r.ids[RACK] == "5"


def test_forced_a3_ignores_a5_fields() -> None:
    r = reading_from(info(chassis_id=3, super_pod_type=1), generation="a3")
    assert isinstance(r, Reading) and set(r.ids) == {SUPERPOD}


@pytest.mark.parametrize("bad", [0xFFFFFFFF, -1, 0xFFFFFFFE, -2])
def test_invalid_superpod_id_is_no_data_with_reason(bad: int) -> None:
    r = reading_from(info(super_pod_id=bad, chassis_id=1, super_pod_type=1))
    assert isinstance(r, NoData)
    assert "Super Pod ID" in r.reason and ("0xffffffff" in r.reason or "0xfffffffe" in r.reason)


def test_invalid_server_and_rack_are_skipped_not_labeled() -> None:
    r = reading_from(info(server_index=0xFFFFFFFF, chassis_id=0xFFFFFFFE, super_pod_type=2))
    assert isinstance(r, Reading)
    assert set(r.ids) == {SUPERPOD}
    assert "0xffffffff" in r.details["serverid"] and "0xfffffffe" in r.details["rackid"]


def test_superpod_zero_is_a_real_id() -> None:
    r = reading_from(info(super_pod_id=0))
    assert isinstance(r, Reading) and r.ids[SUPERPOD] == "0"


def test_source_scope_never_includes_groupid() -> None:
    src = AscendSource(NpuSmiReader())
    keys = ascend_superpod().keys_for(src.roles)
    assert keys == {SUPERPOD: ASCEND_SUPERPOD, RACK: ASCEND_RACK, SERVER: ASCEND_SERVER}
    assert ASCEND_GROUP not in keys.values()


@pytest.mark.parametrize("name", ["", "has space", "x" * 64, "-lead"])
def test_bad_tree_name_is_a_usage_error(name: str) -> None:
    with pytest.raises(UsageError, match="--topotree-name"):
        check_tree_name(name)


def test_bad_generation_and_reader_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="--ascend-generation"):
        AscendSource(NpuSmiReader(), generation="a9")
    with pytest.raises(UsageError, match="--ascend-reader"):
        make_reader("smi")


# ---------------------------------------------------------------- npu-smi reader (fake on PATH)


def test_npu_smi_normal(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(default={"id": 3, "server": 17})
    r = AscendSource(make_reader("npu-smi")).read()
    assert isinstance(r, Reading)
    assert dict(r.ids) == {SUPERPOD: "3"}
    assert r.details["device"] == "npu 0 chip 0"
    # one map call and one query: the first device that answers is enough
    assert fake_npu_smi.calls() == ["info -m", "info -t spod-info -i 0 -c 0"]


def test_npu_smi_a5_fields(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(default={"id": 3, "server": 17, "chassis": 2, "type": 1})
    r = AscendSource(make_reader("npu-smi")).read()
    assert isinstance(r, Reading)
    assert (r.ids[RACK], r.ids[SERVER]) == ("2", "17")


def test_npu_smi_invalid_id_is_no_data(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(default={"id": 4294967295, "server": 4294967295})
    r = AscendSource(make_reader("npu-smi")).read()
    assert isinstance(r, NoData) and "4294967295" in r.reason


def test_npu_smi_partial_device_uses_the_next_one(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(spod={"0:0": "fail", "0:1": "garbage"}, default={"id": 9})
    r = AscendSource(make_reader("npu-smi")).read()
    assert isinstance(r, Reading) and r.ids[SUPERPOD] == "9"
    assert r.details["device"] == "npu 1 chip 0"


def test_npu_smi_every_device_failing_is_an_error(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(default="fail")
    with pytest.raises(AscendCommandFailed, match=r"no NPU answered spod-info \(4 tried\)"):
        make_reader("npu-smi").read_spod()


def test_npu_smi_garbage_everywhere_is_bad_output(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(default="garbage")
    with pytest.raises(AscendBadOutput, match="not a number"):
        make_reader("npu-smi").read_spod()


def test_npu_smi_falls_back_to_list(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(chips=[(2, 0)], map_mode="fail", default={"id": 5})
    assert make_reader("npu-smi").read_spod().device == "npu 2 chip 0"
    assert fake_npu_smi.calls()[:2] == ["info -m", "info -l"]


def test_npu_smi_no_devices(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(chips=[], map_mode="ok")
    with pytest.raises(AscendNoDevice, match="lists no NPU"):
        make_reader("npu-smi").read_spod()


def test_npu_smi_garbage_map_and_failing_list(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(map_mode="garbage", list_mode="fail")
    with pytest.raises(AscendCommandFailed, match=r"no device table.*and then.*info -l"):
        make_reader("npu-smi").read_spod()


def test_npu_smi_timeout(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(default="sleep")
    with pytest.raises(AscendTimeout, match="did not answer within 1 s"):
        NpuSmiReader(timeout=1).read_spod()
    assert len(fake_npu_smi.calls()) == 2  # no retry of the other chips after a hang


def test_npu_smi_missing_says_what_to_mount(tmp_path: Path) -> None:
    with pytest.raises(AscendToolMissing, match=r"--npu-smi PATH.*/usr/local/bin/npu-smi"):
        NpuSmiReader(str(tmp_path / "nope" / "npu-smi")).read_spod()
    assert issubclass(AscendToolMissing, SourceError)


# ---------------------------------------------------------------- DCMI reader (real ctypes)


def test_dcmi_normal(fake_dcmi_lib: Path, dcmi_env: pytest.MonkeyPatch) -> None:
    dcmi_env.setenv("FAKE_DCMI_SUPERPOD", "21")
    got = DcmiReader(str(fake_dcmi_lib)).read_spod()
    assert (got.super_pod_id, got.server_index, got.super_pod_size, got.sdid) == (
        21,
        40,
        384,
        16777216,
    )
    assert (got.chassis_id, got.super_pod_type, got.device) == (0, 0, "card 0 device 0")


def test_dcmi_a5_labels(fake_dcmi_lib: Path, dcmi_env: pytest.MonkeyPatch) -> None:
    for k, v in {"SUPERPOD": "2", "SERVER": "6", "CHASSIS": "11", "TYPE": "2"}.items():
        dcmi_env.setenv(f"FAKE_DCMI_{k}", v)
    r = AscendSource(make_reader("dcmi", dcmi_lib=str(fake_dcmi_lib))).read()
    assert isinstance(r, Reading)
    assert dict(r.ids) == {
        SUPERPOD: "2",
        RACK: "11",
        SERVER: "6",
    }


def test_dcmi_invalid_id(fake_dcmi_lib: Path, dcmi_env: pytest.MonkeyPatch) -> None:
    dcmi_env.setenv("FAKE_DCMI_SUPERPOD", "0xffffffff")
    r = AscendSource(DcmiReader(str(fake_dcmi_lib))).read()
    assert isinstance(r, NoData) and "4294967295" in r.reason


def test_dcmi_partial_device(fake_dcmi_lib: Path, dcmi_env: pytest.MonkeyPatch) -> None:
    dcmi_env.setenv("FAKE_DCMI_CARDS", "3")
    dcmi_env.setenv("FAKE_DCMI_FAIL_CARDS_BELOW", "2")
    assert DcmiReader(str(fake_dcmi_lib)).read_spod().device == "card 2 device 0"


def test_dcmi_all_failing_and_init_failing(
    fake_dcmi_lib: Path, dcmi_env: pytest.MonkeyPatch
) -> None:
    dcmi_env.setenv("FAKE_DCMI_FAIL_CARDS_BELOW", "99")
    with pytest.raises(AscendCommandFailed, match=r"\(2 tried\).*returned -8005"):
        DcmiReader(str(fake_dcmi_lib)).read_spod()
    dcmi_env.setenv("FAKE_DCMI_INIT_RC", "-8020")
    with pytest.raises(AscendCommandFailed, match=r"dcmi_init\(\).*-8020"):
        DcmiReader(str(fake_dcmi_lib)).read_spod()


def test_dcmi_no_cards(fake_dcmi_lib: Path, dcmi_env: pytest.MonkeyPatch) -> None:
    dcmi_env.setenv("FAKE_DCMI_CARDS", "0")
    with pytest.raises(AscendNoDevice):
        DcmiReader(str(fake_dcmi_lib)).read_spod()


def test_dcmi_missing_and_not_a_library(tmp_path: Path) -> None:
    with pytest.raises(AscendToolMissing, match=r"--dcmi-lib PATH.*--ascend-reader npu-smi"):
        DcmiReader(search=[str(tmp_path / "libdcmi.so")]).read_spod()
    junk = tmp_path / "junk.so"
    junk.write_text("not an ELF")
    with pytest.raises(AscendToolMissing, match="cannot load"):
        DcmiReader(str(junk)).read_spod()


def test_dcmi_default_search_uses_driver_dirs() -> None:
    paths = DcmiReader().search
    assert "/usr/local/Ascend/driver/lib64/libdcmi.so" in paths
    assert "/usr/local/Ascend/driver/lib64/driver/libdcmi.so" in paths
    assert "/usr/local/Ascend/driver/lib64/common/libdcmi.so" in paths


# ---------------------------------------------------------------- auto


def test_auto_falls_back_to_npu_smi(tmp_path: Path, fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set(default={"id": 8})
    reader = AutoReader(DcmiReader(search=[str(tmp_path / "none.so")]), NpuSmiReader())
    assert reader.read_spod().super_pod_id == 8


def test_auto_prefers_dcmi(
    fake_dcmi_lib: Path, dcmi_env: pytest.MonkeyPatch, fake_npu_smi: FakeNpuSmi
) -> None:
    dcmi_env.setenv("FAKE_DCMI_SUPERPOD", "31")
    got = make_reader("auto", dcmi_lib=str(fake_dcmi_lib)).read_spod()
    assert got.super_pod_id == 31 and fake_npu_smi.calls() == []


def test_auto_both_failing_reports_both(tmp_path: Path) -> None:
    reader = AutoReader(
        DcmiReader(search=[str(tmp_path / "none.so")]), NpuSmiReader(str(tmp_path / "npu-smi"))
    )
    with pytest.raises(AscendToolMissing, match=r"dcmi: libdcmi.so not found.*npu-smi: npu-smi"):
        reader.read_spod()
