"""Small helpers several test modules share: a loopback port, an HTTP GET that never
raises, polling with a deadline, the environment for running the CLI as a process, and a
fresh interpreter to run a probe in."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def cli_env() -> dict[str, str]:
    """os.environ with PYTHONPATH at this checkout, for `python -m labeler` subprocesses."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def free_port() -> int:
    """A loopback port that was free a moment ago (for a server a subprocess will bind)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 2.0) -> tuple[int, str]:
    """(status, body) of a GET; HTTP errors are answers too, and (0, "") means nothing
    answered (not listening yet, or gone), so it can be polled."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def wait_for(
    cond: Callable[[], T], timeout: float = 5.0, *, what: str = "condition", interval: float = 0.05
) -> T:
    """Poll `cond` until it returns something truthy and return that; AssertionError naming
    `what` when `timeout` seconds pass without it (after one last try)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(interval)
    value = cond()
    if value:
        return value
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def fresh_python(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -c code args`` in a fresh interpreter of this environment (so that what it
    imports is its own), which must exit 0."""
    p = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    return p
