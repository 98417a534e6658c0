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
from pathlib import Path
from types import SimpleNamespace

import pytest

from labeler.core.node import OWNED_ANNOTATION, SOURCE_IDS_ANNOTATION
from labeler.core.profiles import oci_rdma
from labeler.sources.oci_imds import ROLES
from tests.e2e.fake_imds import HOST, INSTANCE, RDMA, Answer, FakeImds, rdma_doc
from tests.fakekube import FakeKube
from tests.helpers import cli_env, free_port, http_get, wait_for

pytestmark = pytest.mark.slow
# The label key of each role, e.g. K.local_block, as the oci-rdma profile writes them.
K = SimpleNamespace(**oci_rdma().keys_for(ROLES))
LEVELS = (K.hpc_island, K.network_block, K.local_block)


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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
    assert f"f1: conflict {K.local_block}: has 'hand-made' (not ours)" in dry.stdout
    assert f"f1: add {K.hpc_island}=" in dry.stdout
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


# --- partial and hostile IMDS answers --------------------------------------------------


def test_broken_rdma_document_labels_from_host_and_a_missing_field_costs_only_its_label(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner
) -> None:
    doc = rdma_doc("i", "nb", "lb1", "h1")
    no_host_id = {k: v for k, v in doc.items() if k != "customerHostId"}
    no_local = {k: v for k, v in doc.items() if k != "customerLocalBlock"}
    for node in ("b500", "bjson", "bempty", "nohost", "nolocal"):
        fake_kube.add_node(node)
    for node, answer in (
        ("b500", Answer(503, "busy")),
        ("bjson", Answer(200, "{not json")),
        ("bempty", Answer(200, None)),
    ):
        imds.set(node, RDMA, answer)
        imds.set(node, HOST, {"id": "x" * 64, "rdmaTopologyData": doc})
    imds.set("nohost", RDMA, no_host_id)
    imds.set("nolocal", RDMA, no_local)
    results = runner.once(("b500",), ("bjson",), ("bempty",), ("nohost",), ("nolocal",))
    for r in results[:4]:
        assert r.returncode == 0, r.stderr
    for node in ("b500", "bjson", "bempty"):
        assert labels(fake_kube, node)[K.local_block] == h(doc["customerLocalBlock"])
    nohost = labels(fake_kube, "nohost")
    assert all(k in nohost for k in LEVELS) and K.host not in nohost
    # A missing level is an error for it and the narrower levels: no placeholder is written.
    assert results[4].returncode == 1
    assert "customerLocalBlock is missing" in results[4].stderr
    nolocal = labels(fake_kube, "nolocal")
    assert K.local_block not in nolocal
    assert nolocal[K.network_block] == h(doc["customerNetworkBlock"])


def test_oci_hpc_oke_placeholder_is_replaced_without_adopt_and_extras_are_written(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner, tmp_path: Path
) -> None:
    placeholder = dict.fromkeys([*LEVELS, K.host, K.rdma_planes], "no-imds-data")
    fake_kube.add_node("gb1", labels=placeholder)
    fabric = "ocid1.computegpumemoryfabric.oc1.iad.anuwcljrg5pyaeycfabric0001"
    cluster = "ocid1.computegpumemorycluster.oc1.iad.anuwcljrg5pyaeyccluster001"
    doc = {**rdma_doc("i", "nb", "lb1", "h1"), "customerGpuMemoryFabric": fabric}
    imds.set("gb1", RDMA, doc)
    imds.set("gb1", HOST, {"id": "x", "rdmaFabricData": {"planes": 4, "ipv6": False}})
    imds.set("gb1", INSTANCE, {"freeformTags": {"oci:compute:gpumemorycluster": cluster}})
    tray = tmp_path / "tray_index"
    tray.write_text("7\n")
    (r,) = runner.once(("gb1", "--encoding", "suffix:11", "--tray-index-file", str(tray)))
    assert r.returncode == 0, r.stderr
    got = labels(fake_kube, "gb1")
    assert got[K.local_block] == doc["customerLocalBlock"][-11:]
    assert got[K.host] == doc["customerHostId"][-11:]
    assert got[K.gpu_memory_fabric] == fabric[-11:]
    assert got[K.gpu_memory_cluster] == cluster[-11:]
    assert (got[K.rdma_planes], got[K.rdma_ipv6], got[K.tray_index]) == ("4", "false", "7")
    assert "no-imds-data" not in got.values()
    assert set(annotations(fake_kube, "gb1")[OWNED_ANNOTATION].split(",")) >= set(placeholder)


def test_imds_deadline_holds_against_a_trickle_and_the_size_cap_against_an_endless_body(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner
) -> None:
    for node in ("trickle", "endless"):
        fake_kube.add_node(node)
    imds.set("trickle", RDMA, Answer(200, rdma_doc("i", "nb", "lb", "h"), trickle=0.2))
    imds.set("endless", RDMA, Answer(200, None, endless=True))
    start = time.monotonic()
    trickle, endless = runner.once(
        ("trickle", "--imds-timeout", "1", "--imds-attempts", "1"), ("endless",)
    )
    elapsed = time.monotonic() - start
    assert trickle.returncode == 1 and "--imds-timeout 1" in trickle.stderr, trickle.stderr
    assert endless.returncode == 1 and "larger than 1048576 bytes" in endless.stderr
    # The trickled document is ~250 bytes: 50 s at its pace; the deadline ends it at 1 s.
    assert elapsed < 20
    for node in ("trickle", "endless"):
        assert not set(labels(fake_kube, node)) & set(LEVELS)


def test_a_one_off_answer_from_another_document_is_never_written(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner
) -> None:
    fake_kube.add_node("flap")
    doc = rdma_doc("i", "nb", "lb1", "h1")
    host_only = {"id": "y" * 64, "networkBlockId": "n" * 64, "rackId": "r" * 64}
    imds.set("flap", RDMA, doc)
    imds.set("flap", HOST, host_only)
    port = free_port()
    proc = runner.start("flap", "--port", str(port), "--interval", "1")
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_for(lambda: K.local_block in labels(fake_kube, "flap"), 15), proc
        want = labels(fake_kube, "flap")[K.local_block]
        fake_kube.clear_journal()
        # rdmaTopologyData missing for about one read, then back: the /host IDs are seen
        # once and held back; nothing is written.
        imds.set("flap", RDMA, Answer(404, "Not Found"))
        assert wait_for(
            lambda: (
                "source_unconfirmed_reads_total" in http_get(base + "/metrics")[1]
                and 'oci-imds"} 1.0' in _unconfirmed(http_get(base + "/metrics")[1])
            ),
            10,
        )
        imds.set("flap", RDMA, doc)
        time.sleep(2.5)
        assert labels(fake_kube, "flap")[K.local_block] == want
        assert fake_kube.count("patch") == 0
        # A lasting change is written once confirmed by the next read.
        imds.set("flap", RDMA, Answer(404, "Not Found"))
        assert wait_for(lambda: labels(fake_kube, "flap")[K.local_block] == h("r" * 64), 15)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)


def _unconfirmed(metrics: str) -> str:
    return "\n".join(
        line for line in metrics.splitlines() if line.startswith("topology_labeler_source_unc")
    )


# --- the readiness gate ----------------------------------------------------------------

GATE = {"key": "topology-labeler.io/not-ready", "effect": "NoSchedule"}
OTHER = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def condition(fake: FakeKube, node: str) -> dict[str, str] | None:
    conditions = fake.get_node(node).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "TopologyLabeled"), None)


def taint_keys(fake: FakeKube, node: str) -> list[str]:
    return [t["key"] for t in fake.get_node(node)["spec"].get("taints") or []]


def test_readiness_gate_opens_only_once_every_level_label_is_on_the_node(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner
) -> None:
    for node in ("gated", "plain"):
        fake_kube.add_node(node, taints=[OTHER, GATE])
    gate = ("--remove-taint", "--set-condition")
    (no_data,) = runner.once(("gated", *gate))
    assert no_data.returncode == 0, no_data.stderr
    assert taint_keys(fake_kube, "gated") == [OTHER["key"], GATE["key"]]
    cond = condition(fake_kube, "gated")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "NoTopologyData")
    assert any(c["type"] == "Ready" for c in fake_kube.get_node("gated")["status"]["conditions"])

    # A missing level keeps the gate shut, with its reason.
    doc = rdma_doc("i", "nb", "lb1", "h1")
    imds.set("gated", RDMA, {k: v for k, v in doc.items() if k != "customerLocalBlock"})
    (partial,) = runner.once(("gated", *gate))
    assert partial.returncode == 1
    assert GATE["key"] in taint_keys(fake_kube, "gated")
    assert condition(fake_kube, "gated")["reason"] == "TopologyIncomplete"  # type: ignore[index]

    imds.set("gated", RDMA, doc)
    imds.set("plain", RDMA, doc)
    gated, plain = runner.once(("gated", *gate), ("plain",))
    assert gated.returncode == 0 and plain.returncode == 0, gated.stderr + plain.stderr
    assert all(k in labels(fake_kube, "gated") for k in LEVELS)
    assert taint_keys(fake_kube, "gated") == [OTHER["key"]]  # only the gate taint went
    cond = condition(fake_kube, "gated")
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Labeled")
    # Without the flags nothing of the gate changes.
    assert taint_keys(fake_kube, "plain") == [OTHER["key"], GATE["key"]]
    assert condition(fake_kube, "plain") is None


def test_slinky_annotation_names_the_leaf_switch_of_the_generated_topology(
    fake_kube: FakeKube, imds: FakeImds, runner: Runner, tmp_path: Path
) -> None:
    from labeler.core.node import SLINKY_ANNOTATION

    fake_kube.add_node("s1")
    imds.set("s1", RDMA, rdma_doc("i", "nb", "lb1", "h1"))
    (r,) = runner.once(("s1", "--slinky-topology", "--slurm-topology-name", "ib"))
    assert r.returncode == 0, r.stderr
    spec = annotations(fake_kube, "s1")[SLINKY_ANNOTATION]
    # generate --emit slurm from the same cluster names that very switch for this node
    out = tmp_path / "gen"
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "labeler",
            "generate",
            "--kubeconfig",
            str(runner.kubeconfig),
            "--profile",
            "oci-rdma",
            "--from-cluster",
            "--resource",
            "cpu",
            "--emit",
            "slurm",
            "--slurm-topology-name",
            "ib",
            "--output-dir",
            str(out),
        ],
        env=runner.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert gen.returncode == 0, gen.stderr
    leaf = spec.removeprefix("ib:")
    assert f"SwitchName={leaf} Nodes=s1" in (out / "slurm" / "topology.conf").read_text()
    # without the flag the agent leaves the annotation as it is (not in its scope)
    fake_kube.clear_journal()
    (again,) = runner.once(("s1",))
    assert again.returncode == 0 and fake_kube.count("patch") == 0
