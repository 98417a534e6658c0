"""The project's commands as processes against a control plane, as a user runs them: one
command to completion, or a long-running one (the agent, the exporter) for the length of a
``with`` block, its output in a log file that stays with the test's folder."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import cli_env, free_port


def _env() -> dict[str, str]:
    env = cli_env()
    env.pop("KUBECONFIG", None)
    return env


def cli(
    *args: str, kubeconfig: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``topology-labeler ARGS [--kubeconfig KC]`` to completion."""
    extra = ["--kubeconfig", str(kubeconfig)] if kubeconfig else []
    return subprocess.run(
        [sys.executable, "-m", "labeler", *args, *extra],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextmanager
def running(log: Path, *args: str, kubeconfig: Path) -> Iterator[subprocess.Popen[str]]:
    """``topology-labeler ARGS --kubeconfig KC`` in the background until the block ends."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "labeler", *args, "--kubeconfig", str(kubeconfig)],
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            yield proc
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@contextmanager
def exporter(log: Path, kubeconfig: Path, *extra: str) -> Iterator[str]:
    """``audit --serve`` of the oci-rdma profile on a loopback port; yields its URL."""
    port = free_port()
    args = ("audit", "--profile", "oci-rdma", "--serve", "--port", str(port), "--bind", "127.0.0.1")
    with running(log, *args, *extra, kubeconfig=kubeconfig):
        yield f"http://127.0.0.1:{port}"
