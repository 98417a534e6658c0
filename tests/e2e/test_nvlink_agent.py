"""``agent --profile nvlink`` as a real process against the fake API server and a fake
nvidia-smi: the clique gpu-feature-discovery or NVIDIA's DRA driver already wrote is
claimed, and no clique is written, changed or removed while a GPU's fabric registration
has not completed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from labeler.core.node import OWNED_ANNOTATION, OWNERS_ANNOTATION
from labeler.core.profiles import NVIDIA_CLIQUE
from tests.fakekube import FakeKube
from tests.helpers import cli_env, free_port, http_get, wait_for
from tests.sources.nvidia_fakes import TRAY, UUID, FakeNvidiaSmi, gpu

pytestmark = pytest.mark.slow

CLIQUE = UUID.lower() + ".32766"
REGISTERING = [*TRAY[:3], gpu("[N/A]", "[N/A]", "In Progress", "[N/A]")]
UNKNOWN = 'topology_labeler_label_unknown{cause="fabric-pending",key="nvidia.com/gpu.clique"}'


def agent(kubeconfig: Path, smi: FakeNvidiaSmi, node: str, *extra: str) -> list[str]:
    return [
        *(sys.executable, "-m", "labeler", "agent", "--profile", "nvlink"),
        *("--kubeconfig", str(kubeconfig), "--node-name", node, "--nvidia-smi", str(smi.path)),
        *extra,
    ]


def once(kubeconfig: Path, smi: FakeNvidiaSmi, node: str) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env.pop("KUBECONFIG", None)
    argv = agent(kubeconfig, smi, node, "--once")
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def labels(fake: FakeKube, node: str) -> dict[str, str]:
    return dict(fake.get_node(node)["metadata"].get("labels") or {})


def test_the_clique_gfd_or_the_dra_driver_wrote_is_claimed_and_another_is_kept(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path
) -> None:
    smi = FakeNvidiaSmi(tmp_path / "bin")
    # Either NVIDIA component writes the same value from the same fabric: no conflict.
    fake_kube.add_node("gb-1", labels={NVIDIA_CLIQUE: CLIQUE})
    fake_kube.add_node("gb-2", labels={NVIDIA_CLIQUE: UUID.lower() + ".1"})
    fake_kube.clear_journal()
    claimed = once(kubeconfig, smi, "gb-1")
    assert claimed.returncode == 0, claimed.stderr
    (patch,) = fake_kube.requests(verb="patch")
    assert "labels" not in patch.body["metadata"]
    meta = fake_kube.get_node("gb-1")["metadata"]
    assert meta["annotations"][OWNED_ANNOTATION] == NVIDIA_CLIQUE
    assert json.loads(meta["annotations"][OWNERS_ANNOTATION]) == {NVIDIA_CLIQUE: "agent"}
    # After the claim the steady state writes nothing.
    fake_kube.clear_journal()
    assert once(kubeconfig, smi, "gb-1").returncode == 0
    assert fake_kube.count("patch") == 0
    # A different value is theirs, not ours to overwrite without --adopt.
    other = once(kubeconfig, smi, "gb-2")
    assert other.returncode == 3, other.stderr
    assert labels(fake_kube, "gb-2")[NVIDIA_CLIQUE] == UUID.lower() + ".1"


def test_no_clique_is_written_changed_or_removed_until_every_gpu_has_registered(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path
) -> None:
    smi = FakeNvidiaSmi(tmp_path / "bin").set(REGISTERING)
    fake_kube.add_node("new")  # never labeled
    fake_kube.add_node(
        "moved",  # labeled by us from an earlier fabric
        labels={NVIDIA_CLIQUE: UUID.lower() + ".5"},
        annotations={OWNED_ANNOTATION: NVIDIA_CLIQUE},
    )
    fake_kube.clear_journal()
    for node in ("new", "moved"):
        done = once(kubeconfig, smi, node)
        # --once: a level is unknown, so not done (exit 1), with the reason.
        assert done.returncode == 1, done.stdout + done.stderr
        assert "GPU 3 is 'In Progress'" in done.stderr
        assert "have not registered with the NVLink fabric" in done.stderr
    assert fake_kube.count("patch") == 0
    assert NVIDIA_CLIQUE not in labels(fake_kube, "new")
    assert labels(fake_kube, "moved")[NVIDIA_CLIQUE] == UUID.lower() + ".5"
    # A registration that failed is no better than one still running.
    smi.set([*TRAY[:3], gpu(status="Unknown Error")])
    failed = once(kubeconfig, smi, "moved")
    assert failed.returncode == 1 and "GPU 3 failed ('Unknown Error')" in failed.stderr
    assert labels(fake_kube, "moved")[NVIDIA_CLIQUE] == UUID.lower() + ".5"


def test_a_running_agent_reports_the_unknown_clique_then_writes_it_once_registered(
    fake_kube: FakeKube, kubeconfig: Path, tmp_path: Path
) -> None:
    smi = FakeNvidiaSmi(tmp_path / "bin").set(REGISTERING)
    fake_kube.add_node("gb-1")
    env = cli_env()
    env.pop("KUBECONFIG", None)
    port = free_port()
    argv = agent(kubeconfig, smi, "gb-1", "--port", str(port), "--interval", "1")
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    metrics = f"http://127.0.0.1:{port}/metrics"
    try:
        assert wait_for(lambda: UNKNOWN + " 1.0" in http_get(metrics)[1], 10)
        assert NVIDIA_CLIQUE not in labels(fake_kube, "gb-1")
        smi.set(TRAY)  # the last GPU has registered
        assert wait_for(lambda: labels(fake_kube, "gb-1").get(NVIDIA_CLIQUE) == CLIQUE, 15)
        assert wait_for(lambda: UNKNOWN not in http_get(metrics)[1], 5)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=10)
    # Said once when it appeared, not on every read; and once when it went.
    unknown = [ln for ln in stderr.splitlines() if "topology label unknown" in ln]
    assert len(unknown) == 1, stderr
    assert "cause=fabric-pending" in unknown[0] and "GPU 3 is 'In Progress'" in unknown[0]
    assert "topology label known again node=gb-1 key=nvidia.com/gpu.clique" in stderr
