"""Logging set-up in a fresh interpreter: logging is loaded when something is logged at the
command line's level, and what is logged then (ours, or a library's) is formatted and
filtered as the command line says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import fresh_python

PROBE = """
import sys
from labeler.base.logs import LogFormat, logger, setup_logging

log = logger("labeler.probe")
setup_logging("info", LogFormat(sys.argv[1]))
log.debug("below the level n=%d", 1)
print("loaded after debug:", "logging" in sys.modules)
log.info("at the level n=%d", 2)
print("loaded after info:", "logging" in sys.modules)
"""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_logging_is_loaded_by_the_first_message_at_the_level(fmt: str, tmp_path: Path) -> None:
    p = fresh_python(PROBE, fmt, cwd=tmp_path)
    assert p.stdout.splitlines() == ["loaded after debug: False", "loaded after info: True"]
    [line] = p.stderr.splitlines()  # the debug message is dropped, as logging would
    if fmt == "json":
        doc = json.loads(line)
        assert (doc["level"], doc["logger"], doc["msg"]) == (
            "info",
            "labeler.probe",
            "at the level n=2",
        )
    else:
        assert line.endswith(" INFO labeler.probe at the level n=2")


LIBRARY_PROBE = """
import sys
from labeler.base.logs import LogFormat, setup_logging
from labeler.kube import official

setup_logging("debug", LogFormat.TEXT)
print("loaded before the client:", "logging" in sys.modules)
official.configuration()  # loads the client, which logs on its own
import logging

root = logging.getLogger()
print(logging.getLevelName(root.level), [type(h).__name__ for h in root.handlers])
print(logging.getLevelName(logging.getLogger("urllib3").getEffectiveLevel()))
"""


def test_the_settings_are_applied_before_the_client_that_logs_is_loaded(tmp_path: Path) -> None:
    # Nothing of ours has logged: the settings are applied as the client is loaded, so
    # its messages (and urllib3's retries, kept to errors) go out like ours.
    p = fresh_python(LIBRARY_PROBE, cwd=tmp_path)
    assert p.stdout.splitlines() == [
        "loaded before the client: False",
        "DEBUG ['StreamHandler']",
        "ERROR",
    ]
