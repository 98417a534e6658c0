"""`topology-labeler audit --serve` as a process: probes, metrics, a label change through the
watch, and a prompt clean exit on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from labeler.profiles import oci_rdma
from tests.fakekube import FakeKube

ROOT = Path(__file__).resolve().parents[2]
LEVELS = oci_rdma().topology.keys


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def poll(fn: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_serve_process_end_to_end(tmp_path: Path) -> None:
    with FakeKube() as fake:
        labels = dict(zip(LEVELS, ("i1", "n1", "l1"), strict=True))
        fake.add_node("g1", labels=labels, allocatable={"nvidia.com/gpu": "8"})
        fake.add_node("g2", labels=labels, allocatable={"nvidia.com/gpu": "8"})
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "labeler",
                "audit",
                "--serve",
                "--profile",
                "oci-rdma",
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--kubeconfig",
                str(kubeconfig),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            poll(lambda: get(base + "/readyz")[0] == 200, 20, "/readyz")
            assert get(base + "/healthz")[0] == 200
            labeled = 'topology_labeler_nodes{profile="oci-rdma",state="labeled"} 2.0'
            poll(lambda: labeled in get(base + "/metrics")[1], 5, "2 labeled nodes")
            fake.set_node_labels("g2", {LEVELS[2]: None})
            partial = 'topology_labeler_nodes{profile="oci-rdma",state="partial"} 1.0'
            started = time.monotonic()
            poll(lambda: partial in get(base + "/metrics")[1], 5, "g2 partial")
            assert time.monotonic() - started < 2.0
            assert get(base + "/nope")[0] == 404
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        assert proc.returncode == 0, err
        assert "serving audit metrics" in err
