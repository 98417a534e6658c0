"""The exporter across a real API server's crash and restart: while it is away the stale
gauge counts and /readyz turns 503 saying why (/healthz stays 200); once it is back the
watch is open again within seconds, the gauge is 0 and a change is counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import cli_env, free_port, http_get, wait_for
from tests.realkube import cluster
from tests.realkube.controlplane import ControlPlane
from tests.realkube.test_plugin_audit_real import GPU, metric


def test_exporter_across_an_api_server_restart(own_real_kube: ControlPlane, tmp_path: Path) -> None:
    plane = own_real_kube
    cluster.add_node(plane, "wr-gpu-1", allocatable=GPU)
    env = cli_env()
    env.pop("KUBECONFIG", None)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = (tmp_path / "audit.log").open("w")
    argv = ["audit", "--profile", "oci-rdma", "--serve", "--port", str(port)]
    argv += ["--bind", "127.0.0.1", "--stale-after", "3", "--kubeconfig", str(plane.kubeconfig)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "labeler", *argv], env=env, stdout=log, stderr=subprocess.STDOUT
    )

    def stale() -> float | None:
        status, body = http_get(base + "/metrics")
        if status != 200:
            return None
        found = [v for k, v in metric(body, "topology_labeler_audit_stale_seconds").items()
                 if 'resource="nodes"' in k]  # fmt: skip
        return found[0] if found else None

    def unlabeled() -> float:
        body = http_get(base + "/metrics")[1]
        return sum(v for k, v in metric(body, "topology_labeler_nodes").items()
                   if 'state="unlabeled"' in k)  # fmt: skip

    try:
        wait_for(lambda: http_get(base + "/readyz")[0] == 200, timeout=60, what="ready")
        assert stale() == 0.0
        plane.kill("kube-apiserver")
        wait_for(lambda: http_get(base + "/readyz")[0] == 503, timeout=30, what="not ready")
        status, text = http_get(base + "/readyz")
        assert status == 503 and "the node watch has been down for" in text, text
        assert (stale() or 0.0) > 3.0
        assert http_get(base + "/healthz")[0] == 200
        plane.restart("kube-apiserver")
        # A generous bound: the watch is tried again every second for 30 s after it
        # broke, then at doubling waits up to 30 s.
        wait_for(lambda: stale() == 0.0, timeout=40, what="the node watch open again")
        assert http_get(base + "/readyz")[0] == 200
        cluster.add_node(plane, "wr-gpu-2", allocatable=GPU)
        wait_for(lambda: unlabeled() == 2, timeout=20, what="the new node counted")
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
