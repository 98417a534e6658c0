"""Contract: the fake runs as a process (`python -m tests.fakekube`).

Fake only: it is about the fake's own command line.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[2]


def test_process_serves_seeded_nodes_and_writes_journal(tmp_path: Path) -> None:
    """Runs until SIGTERM, prints its URL, writes a kubeconfig usable by load_kube_config and
    per-verb request counts on exit."""
    kc, jr = tmp_path / "kc", tmp_path / "journal.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakekube",
            "--nodes",
            "25",
            "--labels",
            "pool=a",
            "--allocatable",
            "nvidia.com/gpu=8",
            "--kubeconfig-out",
            str(kc),
            "--journal-out",
            str(jr),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        api = config.new_client_from_config(str(kc))
        nodes = client.CoreV1Api(api).list_node(label_selector="pool=a").items
        assert len(nodes) == 25
        assert nodes[0].status.allocatable["nvidia.com/gpu"] == "8"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert proc.returncode == 0
    assert json.loads(jr.read_text())["list"] == 1
