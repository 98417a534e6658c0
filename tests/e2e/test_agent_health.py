"""The running agent against an IMDS that answers deeply nested JSON: json raises
RecursionError while the source thread reads it. The thread must not die while /healthz
says 200: it is a source error (logged on one line, counted), the agent keeps reading
IMDS, and labels the node once IMDS answers properly. (Any other unexpected exception in
a thread is caught by the agent's thread supervision: tests/agent/test_agent_threads.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.fake_imds import RDMA, Answer, FakeImds, rdma_doc
from tests.e2e.test_agent import K, Runner, labels
from tests.fakekube import FakeKube
from tests.helpers import free_port, http_get, wait_for

pytestmark = pytest.mark.slow


def metric(port: int, name: str) -> float:
    for line in http_get(f"http://127.0.0.1:{port}/metrics")[1].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def test_deeply_nested_json_is_a_source_error_and_the_agent_reads_on(
    fake_kube: FakeKube, kubeconfig: Path, imds: FakeImds
) -> None:
    fake_kube.add_node("d1")
    imds.set("d1", RDMA, Answer(200, "[" * 100_000))
    port = free_port()
    runner = Runner(kubeconfig, imds)
    proc = runner.start("d1", "--port", str(port), "--interval", "1")
    base = f"http://127.0.0.1:{port}"
    try:
        source_errors = 'topology_labeler_source_reads_total{result="error",source="oci-imds"}'
        wait_for(lambda: metric(port, source_errors) >= 2, 20, what="two failed reads")
        reads = len([s for s in imds.requests_for("d1") if s.path == RDMA])
        assert reads >= 2  # the source thread is alive and reading again
        assert http_get(base + "/healthz") == (200, "ok\n")

        imds.set("d1", RDMA, rdma_doc("i", "nb", "lb1", "h1"))
        wait_for(lambda: K.local_block in labels(fake_kube, "d1"), 30, what="labels")
        assert http_get(base + "/healthz")[0] == 200
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
    assert "the answer is not JSON" in stderr
    assert "Traceback" not in stderr
