"""Fakes of the Ascend driver for tests: an ``npu-smi`` script and a ``libdcmi.so``.

``FakeNpuSmi`` writes an executable ``npu-smi`` (Python, run by this interpreter) into a
directory, plus ``npu-smi.json`` which says what it answers; tests put the directory first
on PATH. The output formats follow the real tool's (columns and ``Key : value`` lines).

``build_fake_dcmi`` compiles a small C library exporting the DCMI calls we use; environment
variables (read at call time) say what it returns, so one build serves every test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.sources.fake_program import FakeProgram

SCRIPT = r"""
import json, sys, time
from pathlib import Path

spec = json.loads(Path(__file__).with_name("npu-smi.json").read_text())
args = sys.argv[1:]
if spec.get("log"):
    with open(spec["log"], "a") as f:
        f.write(" ".join(args) + "\n")

def out(text):
    sys.stdout.write(text)
    sys.exit(0)

def fail(code=255, text="Error: The device does not exist or an error occurred."):
    sys.stdout.write(text + "\n")
    sys.exit(code)

def row(cols):
    return "\t" + "".join(str(c).ljust(31) for c in cols).rstrip() + "\n"

chips = spec.get("chips", [[0, 0]])
if args == ["info", "-m"]:
    mode = spec.get("map", "ok")
    if mode == "fail":
        fail(2, "Error: invalid option -m")
    if mode == "garbage":
        out("dcmi model initialized failed, because the device is used. ret is -8020\n")
    text = row(["NPU ID", "Chip ID", "Chip Logic ID", "Chip Name"])
    logic = 0
    npus = sorted({n for n, _ in chips})
    for npu in npus:
        last = -1
        for n, c in chips:
            if n == npu:
                text += row([n, c, logic, spec.get("chip_name", "Ascend910")])
                logic += 1
                last = max(last, c)
        text += row([npu, last + 1, "-", "Mcu"])
    out(text)
if args == ["info", "-l"]:
    if spec.get("list", "ok") == "fail":
        fail()
    npus = sorted({n for n, _ in chips})
    text = "\tTotal Count                    : %d\n\n" % len(npus)
    for npu in npus:
        count = sum(1 for n, _ in chips if n == npu)
        text += "\tNPU ID                         : %d\n" % npu
        text += "\tProduct Name                   : Atlas 900 A3 SuperPoD\n"
        text += "\tChip Count                     : %d\n\n" % count
    out(text)
if len(args) == 7 and args[:3] == ["info", "-t", "spod-info"] and args[3:6:2] == ["-i", "-c"]:
    key = "%s:%s" % (args[4], args[6])
    if [int(args[4]), int(args[6])] not in chips:
        fail(255, "Error: The device does not exist.")
    ans = spec.get("spod", {}).get(key, spec.get("default_spod"))
    if ans is None or ans == "fail":
        fail(255, "Error: Query spod-info failed. ret is -8005")
    if ans == "garbage":
        out("\tSuper Pod ID                   : N/A\n\tServer Index : ???\n")
    if ans == "empty":
        out("")
    if ans == "sleep":
        time.sleep(30)
        out("")
    lines = [("SDID", ans.get("sdid", 16777216)), ("Super Pod Size", ans.get("size", 384)),
             ("Super Pod ID", ans["id"]), ("Server Index", ans.get("server", 0))]
    if "chassis" in ans:
        lines.append(("Chassis ID", ans["chassis"]))
    if "type" in ans:
        lines.append(("Super Pod Type", ans["type"]))
    out("".join("\t%-31s: %s\n" % (k, v) for k, v in lines))
fail(2, "Error: unknown command " + " ".join(args))
"""


DEFAULT_CHIPS = [(0, 0), (0, 1), (1, 0), (1, 1)]  # an A3 node: two chips per NPU card


class FakeNpuSmi(FakeProgram):
    """An ``npu-smi`` on disk whose answers come from ``npu-smi.json`` beside it."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, "npu-smi", SCRIPT)
        self.set()

    def set(
        self,
        *,
        chips: list[tuple[int, int]] | None = None,
        spod: Mapping[str, Any] | None = None,
        default: Mapping[str, Any] | str | None = None,
        map_mode: str = "ok",
        list_mode: str = "ok",
    ) -> FakeNpuSmi:
        """``spod`` maps "npu:chip" to a dict (id, server, size, sdid, chassis, type) or to
        "fail" / "garbage" / "empty" / "sleep"; ``default`` answers the other chips."""
        self.write_spec(
            {
                "chips": [list(c) for c in (chips if chips is not None else DEFAULT_CHIPS)],
                "spod": dict(spod or {}),
                "default_spod": default if default is not None else {"id": 7, "server": 40},
                "map": map_mode,
                "list": list_mode,
            }
        )
        if self.log.exists():
            self.log.unlink()
        return self


DCMI_C = r"""
#include <stdlib.h>
#include <string.h>

struct dcmi_spod_info {
    unsigned int sdid, scale_type, super_pod_id, server_id, chassis_id, super_pod_type;
    unsigned int reserve[6];
};

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? (int)strtol(v, NULL, 0) : fallback;
}

static unsigned int env_uint(const char *name, unsigned int fallback) {
    const char *v = getenv(name);
    return v && *v ? (unsigned int)strtoul(v, NULL, 0) : fallback;
}

int dcmi_init(void) { return env_int("FAKE_DCMI_INIT_RC", 0); }

int dcmi_get_card_num_list(int *card_num, int *card_list, int list_len) {
    int n = env_int("FAKE_DCMI_CARDS", 2), i;
    if (env_int("FAKE_DCMI_LIST_RC", 0)) return env_int("FAKE_DCMI_LIST_RC", 0);
    if (n > list_len) n = list_len;
    for (i = 0; i < n; i++) card_list[i] = i;
    *card_num = n;
    return 0;
}

int dcmi_get_device_num_in_card(int card_id, int *device_num) {
    (void)card_id;
    *device_num = env_int("FAKE_DCMI_DEVICES", 1);
    return 0;
}

int dcmi_get_device_info(int card_id, int device_id, int main_cmd, unsigned int sub_cmd,
                         void *buf, unsigned int *size) {
    struct dcmi_spod_info *info = buf;
    (void)device_id;
    if (main_cmd != 12 || sub_cmd != 1) return -8001;
    if (*size < sizeof(*info)) return -8002;
    if (card_id < env_int("FAKE_DCMI_FAIL_CARDS_BELOW", 0)) return -8005;
    memset(info, 0, sizeof(*info));
    info->sdid = env_uint("FAKE_DCMI_SDID", 16777216u);
    info->scale_type = env_uint("FAKE_DCMI_SIZE", 384u);
    info->super_pod_id = env_uint("FAKE_DCMI_SUPERPOD", 7u);
    info->server_id = env_uint("FAKE_DCMI_SERVER", 40u);
    info->chassis_id = env_uint("FAKE_DCMI_CHASSIS", 0u);
    info->super_pod_type = env_uint("FAKE_DCMI_TYPE", 0u);
    *size = sizeof(*info);
    return 0;
}
"""


def c_compiler() -> str | None:
    for name in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    return None


def build_fake_dcmi(directory: Path) -> Path:
    """Compile the fake ``libdcmi.so`` into ``directory``; raise if no compiler works."""
    cc = c_compiler()
    if cc is None:
        raise FileNotFoundError("no C compiler (cc, gcc, clang) on PATH")
    src = directory / "fake_dcmi.c"
    lib = directory / "libdcmi.so"
    src.write_text(DCMI_C, encoding="utf-8")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O0", "-o", str(lib), str(src)],
        check=True,
        capture_output=True,
    )
    return lib
