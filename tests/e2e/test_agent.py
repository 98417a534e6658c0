"""The agent as a real process, against the fake API server and a loopback fake IMDS.

Each subprocess costs about a second, so independent runs start in parallel.
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from labeler.node import OWNED_ANNOTATION, SOURCE_IDS_ANNOTATION
from labeler.profiles import oci_rdma
from labeler.sources.oci_imds import ROLES
from tests.e2e.fake_imds import HOST, RDMA, Answer, FakeImds, rdma_doc
from tests.fakekube import FakeKube
from tests.helpers import cli_env, free_port, http_get, wait_for

pytestmark = pytest.mark.slow
# The label key of each role, e.g. K.local_block, as the oci-rdma profile writes them.
K = SimpleNamespace(**oci_rdma().keys_for(ROLES))
LEVELS = (K.hpc_island, K.network_block, K.local_block)


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.fixture
def imds() -> Iterator[FakeImds]:
    with FakeImds() as fake:
        yield fake


class Runner:
    def __init__(self, kubeconfig: Path, imds: FakeImds) -> None:
        self.kubeconfig = kubeconfig
        self.imds = imds
        self.env = cli_env()
        self.env.pop("KUBECONFIG", None)
        self.env.pop("NODE_NAME", None)

    def cmd(self, node: str, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "labeler",
            "agent",
            "--profile",
            "oci-rdma",
            "--kubeconfig",
            str(self.kubeconfig),
            "--node-name",
            node,
            "--imds-url",
            self.imds.url_for(node),
            "--imds-timeout",
            "0.5",
            "--imds-attempts",
            "2",
            *extra,
        ]

    def start(self, node: str, *extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.cmd(node, *extra),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def once(self, *runs: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
        """Run ``agent --once`` for each (node, *flags) in parallel; results in order."""
        procs = [self.start(node, "--once", *flags) for node, *flags in runs]
        out = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=60)
            out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
        return out


@pytest.fixture
def runner(kubeconfig: Path, imds: FakeImds) -> Runner:
    return Runner(kubeconfig, imds)


def labels(fake: FakeKube, node: str) -> dict[str, str]:
    return dict(fake.get_node(node)["metadata"].get("labels") or {})


def annotations(fake: FakeKube, node: str) -> dict[str, str]:
    return dict(fake.get_node(node)["metadata"].get("annotations") or {})


def test_labels_appear_equal_per_block_and_a_second_run_writes_nothing(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner
) -> None:
    for node in ("n1", "n2", "n3"):
        fake_kube.add_node(node)
    imds.set("n1", RDMA, rdma_doc("i", "nb", "lb1", "h1"))
    imds.set("n2", RDMA, rdma_doc("i", "nb", "lb1", "h2"))
    imds.set("n3", RDMA, rdma_doc("i", "nb", "lb2", "h3"))
    results = runner.once(("n1",), ("n2",), ("n3",))
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    n1, n2, n3 = (labels(fake_kube, n) for n in ("n1", "n2", "n3"))
    doc = rdma_doc("i", "nb", "lb1", "h1")
    assert n1[K.local_block] == h(doc["customerLocalBlock"])
    assert n1[K.local_block] == n2[K.local_block] != n3[K.local_block]
    assert n1[K.network_block] == n2[K.network_block] == n3[K.network_block]
    assert n1[K.host] != n2[K.host]
    ann = annotations(fake_kube, "n1")
    assert json.loads(ann[SOURCE_IDS_ANNOTATION])[K.local_block] == doc["customerLocalBlock"]
    assert ann[OWNED_ANNOTATION].split(",") == sorted([*LEVELS, K.host])
    assert all(s.headers.get("Authorization") == "Bearer Oracle" for s in imds.seen)
    assert not any(
        k.lower().startswith(("forwarded", "x-forwarded")) for s in imds.seen for k in s.headers
    )

    fake_kube.clear_journal()
    (again,) = runner.once(("n1",))
    assert again.returncode == 0, again.stderr
    assert "already current" in again.stdout
    assert fake_kube.count("patch") == 0
    assert fake_kube.count("list") == 0


@pytest.mark.parametrize("encoding", ["suffix:11"])
def test_oracle_compatible_encoding_and_no_data(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner, encoding: str
) -> None:
    for node in ("s1", "empty", "iso"):
        fake_kube.add_node(node)
    doc = rdma_doc("i", "nb", "lb1", "h1")
    imds.set("s1", RDMA, doc)
    imds.set("empty", HOST, {"id": "x" * 64, "shape": "VM.GPU.A10.1"})  # no RDMA: no data
    suffix, skip, isolate = runner.once(
        ("s1", "--encoding", encoding), ("empty",), ("iso", "--on-missing", "isolate")
    )
    assert suffix.returncode == 0, suffix.stderr
    assert labels(fake_kube, "s1")[K.local_block] == doc["customerLocalBlock"][-11:]
    assert skip.returncode == 0 and "no topology data" in skip.stdout, skip.stderr
    assert not set(labels(fake_kube, "empty")) & set(LEVELS)
    assert isolate.returncode == 0, isolate.stderr
    iso = labels(fake_kube, "iso")
    assert {iso[k] for k in LEVELS} == {"isolated-" + h("iso")}


def test_imds_failures_leave_labels_untouched_and_fail(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner
) -> None:
    before = {K.local_block: "0123456789abcdef", "team": "a"}
    owned = {OWNED_ANNOTATION: K.local_block}
    for node in ("e500", "slow", "garbage"):
        fake_kube.add_node(node, labels=before, annotations=owned)
    imds.set("e500", RDMA, Answer(500, "oops"))
    imds.set("slow", RDMA, Answer(200, rdma_doc("i", "nb", "lb", "h"), delay=3))
    imds.set("garbage", RDMA, Answer(200, "{not json"))
    fake_kube.clear_journal()
    results = runner.once(("e500",), ("slow",), ("garbage",))
    assert [r.returncode for r in results] == [1, 1, 1]
    assert "500" in results[0].stderr
    assert "timeout" in results[1].stderr
    assert "not JSON" in results[2].stderr
    for node in ("e500", "slow", "garbage"):
        assert {k: labels(fake_kube, node).get(k) for k in before} == before
    assert fake_kube.count("patch") == 0


def test_a_foreign_value_is_kept_without_adopt(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner
) -> None:
    fake_kube.add_node("f1", labels={K.local_block: "hand-made"})
    doc = rdma_doc("i", "nb", "lb1", "h1")
    imds.set("f1", RDMA, doc)
    fake_kube.clear_journal()
    (dry,) = runner.once(("f1", "--dry-run"))
    (plain,) = runner.once(("f1",))
    assert dry.returncode == 3, dry.stdout + dry.stderr
    assert f"  conflict {K.local_block}: has 'hand-made' (not ours)" in dry.stdout
    assert f"  add {K.hpc_island}=" in dry.stdout
    assert plain.returncode == 3, plain.stderr
    assert "--adopt" in plain.stderr
    assert labels(fake_kube, "f1")[K.local_block] == "hand-made"
    (adopt,) = runner.once(("f1", "--adopt"))
    assert adopt.returncode == 0, adopt.stderr
    assert labels(fake_kube, "f1")[K.local_block] == h(doc["customerLocalBlock"])


def test_running_agent_repairs_drift_serves_metrics_and_stops_on_sigterm(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner
) -> None:
    fake_kube.add_node("r1")
    imds.set("r1", RDMA, rdma_doc("i", "nb", "lb1", "h1"))
    port = free_port()
    proc = runner.start("r1", "--port", str(port), "--interval", "1")
    try:
        assert wait_for(lambda: K.local_block in labels(fake_kube, "r1"), 10), proc
        want = labels(fake_kube, "r1")[K.local_block]
        base = f"http://127.0.0.1:{port}"
        assert wait_for(lambda: http_get(base + "/readyz")[0] == 200, 5)
        assert http_get(base + "/healthz")[0] == 200
        metrics = http_get(base + "/metrics")[1]
        assert "topology_labeler_node_labeled 1.0" in metrics
        assert 'topology_labeler_source_reads_total{result="reading",source="oci-imds"}' in metrics
        assert 'topology_labeler_label_writes_total{result="success"} 1.0' in metrics

        fake_kube.set_node_labels("r1", {K.local_block: None})
        assert wait_for(lambda: labels(fake_kube, "r1").get(K.local_block) == want, 5)
        reasons = [o.get("reason") for o in fake_kube.objects("Event")]
        assert "TopologyLabelsUpdated" in reasons
        assert fake_kube.count("list") == 0  # a watch with a field selector, never a LIST

        # A hung IMDS (the agent re-reads every ~1 s) must not delay SIGTERM.
        imds.set("r1", RDMA, Answer(200, {}, delay=30))
        time.sleep(1.5)
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=5)
        assert time.monotonic() - start < 2.0
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
