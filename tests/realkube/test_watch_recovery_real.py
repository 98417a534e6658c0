"""The exporter across a real API server's crash and restart: while it is away the stale
gauge counts and /readyz turns 503 saying why (/healthz stays 200); once it is back the
watch is open again within seconds, the gauge is 0 and a change is counted."""

from __future__ import annotations

from pathlib import Path

from tests.audit.test_audit_fake import scrape, series
from tests.helpers import http_get, wait_for
from tests.realkube import cluster, processes
from tests.realkube.controlplane import ControlPlane
from tests.realkube.test_plugin_audit_real import GPU, unlabeled

STALE = series("topology_labeler_audit_stale_seconds", driver="", resource="nodes")


def test_exporter_across_an_api_server_restart(own_real_kube: ControlPlane, tmp_path: Path) -> None:
    plane = own_real_kube
    cluster.add_node(plane, "wr-gpu-1", allocatable=GPU)
    log = tmp_path / "audit.log"
    with processes.exporter(log, plane.kubeconfig, "--stale-after", "3") as base:

        def stale() -> float | None:
            try:
                return scrape(base).get(STALE)
            except OSError:
                return None

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
        wait_for(lambda: unlabeled(base) == 2, timeout=20, what="the new node counted")
