"""``agent --profile gce --once`` as a real process against a loopback GCE metadata server."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.core.profiles import GCE_BLOCK, GCE_HOST, GCE_SUBBLOCK
from labeler.sources.gce import HOST_PATH, TOPOLOGY_PATH
from tests.e2e.fake_imds import Answer, FakeImds
from tests.e2e.once import agents_once, labels
from tests.fakekube import FakeKube

pytestmark = pytest.mark.slow


def test_gke_keys_from_either_attribute_and_none_for_a_vm_without_them(
    fake_kube: FakeKube, imds: FakeImds, kubeconfig: Path
) -> None:
    for node in ("a4-1", "a4-2", "plain", "down"):
        fake_kube.add_node(node)
    imds.set("a4-1", TOPOLOGY_PATH, {"cluster": "c", "block": "b1", "subBlock": "s1", "host": "h1"})
    imds.set("a4-2", HOST_PATH, Answer(200, "/b1/s2/h2"))
    imds.set("down", TOPOLOGY_PATH, Answer(503, "busy"))
    one, two, plain, down = agents_once(
        kubeconfig, imds, "gce", "--gce-metadata", "a4-1", "a4-2", "plain", "down"
    )
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert {k: labels(fake_kube, "a4-1")[k] for k in (GCE_BLOCK, GCE_SUBBLOCK, GCE_HOST)} == {
        GCE_BLOCK: "b1",
        GCE_SUBBLOCK: "s1",
        GCE_HOST: "h1",
    }
    assert labels(fake_kube, "a4-2")[GCE_SUBBLOCK] == "s2"
    assert labels(fake_kube, "a4-2")[GCE_BLOCK] == "b1"
    # Every request carried the header the metadata server demands.
    assert all(s.headers.get("Metadata-Flavor") == "Google" for s in imds.seen)
    # No attributes: no data, nothing written, exit 0; the metadata server down: exit 1.
    assert plain.returncode == 0, plain.stderr
    assert "no physical host topology" in plain.stdout + plain.stderr
    assert down.returncode == 1 and "no topology to fall back on" in down.stderr
    for node in ("plain", "down"):
        assert not any(k.startswith("cloud.google.com/") for k in labels(fake_kube, node))
