"""`topology-labeler audit --serve` as a process: probes, metrics, a label change through the
watch, and a prompt clean exit on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labeler.core.profiles import oci_rdma
from tests.fakekube import FakeKube
from tests.helpers import cli_env, free_port, http_get, wait_for

LEVELS = oci_rdma().topology.keys


@pytest.mark.slow
def test_serve_process_end_to_end(tmp_path: Path) -> None:
    with FakeKube() as fake:
        labels = dict(zip(LEVELS, ("i1", "n1", "l1"), strict=True))
        fake.add_node("g1", labels=labels, allocatable={"nvidia.com/gpu": "8"})
        fake.add_node("g2", labels=labels, allocatable={"nvidia.com/gpu": "8"})
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = cli_env()
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
            wait_for(lambda: http_get(base + "/readyz")[0] == 200, 20, what="/readyz")
            assert http_get(base + "/healthz")[0] == 200
            labeled = 'topology_labeler_nodes{profile="oci-rdma",state="labeled"} 2.0'
            wait_for(lambda: labeled in http_get(base + "/metrics")[1], 5, what="2 labeled nodes")
            fake.set_node_labels("g2", {LEVELS[2]: None})
            partial = 'topology_labeler_nodes{profile="oci-rdma",state="partial"} 1.0'
            started = time.monotonic()
            wait_for(lambda: partial in http_get(base + "/metrics")[1], 5, what="g2 partial")
            assert time.monotonic() - started < 2.0
            assert http_get(base + "/nope")[0] == 404
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        assert proc.returncode == 0, err
        assert "serving audit metrics" in err
