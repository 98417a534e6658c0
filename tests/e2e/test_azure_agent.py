"""``agent --profile azure --once`` as a real process against a loopback Azure IMDS."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.core.profiles import (
    AZURE_INTERCONNECT_GROUP,
    AZURE_INTERCONNECT_SUBGROUP,
    AZURE_PLACEMENT_GROUP,
)
from labeler.sources.azure import COMPUTE_PATH, LEGACY_TAG
from tests.e2e.fake_imds import Answer, FakeImds
from tests.e2e.once import agents_once, labels
from tests.fakekube import FakeKube

pytestmark = pytest.mark.slow


def test_interconnect_labels_from_the_fields_or_the_tag_and_none_without_them(
    fake_kube: FakeKube, imds: FakeImds, kubeconfig: Path
) -> None:
    for node in ("gb300-1", "legacy", "plain", "down"):
        fake_kube.add_node(node)
    imds.set(
        "gb300-1",
        COMPUTE_PATH,
        {"interconnectGroupId": "g1", "interconnectSubgroupId": "s1", "placementGroupId": "p1"},
    )
    imds.set("legacy", COMPUTE_PATH, {"tagsList": [{"name": LEGACY_TAG, "value": "rack-2"}]})
    imds.set("plain", COMPUTE_PATH, {"vmSize": "Standard_D4s_v3"})
    imds.set("down", COMPUTE_PATH, Answer(503, "busy"))
    one, legacy, plain, down = agents_once(
        kubeconfig, imds, "azure", "--azure-imds", "gb300-1", "legacy", "plain", "down"
    )
    assert one.returncode == 0 and legacy.returncode == 0, one.stderr + legacy.stderr
    got = labels(fake_kube, "gb300-1")
    assert {k: got[k] for k in (AZURE_INTERCONNECT_GROUP, AZURE_INTERCONNECT_SUBGROUP)} == {
        AZURE_INTERCONNECT_GROUP: "g1",
        AZURE_INTERCONNECT_SUBGROUP: "s1",
    }
    assert got[AZURE_PLACEMENT_GROUP] == "p1"
    assert labels(fake_kube, "legacy")[AZURE_INTERCONNECT_SUBGROUP] == "rack-2"
    assert all(s.headers.get("Metadata") == "true" for s in imds.seen)
    # No interconnect IDs: no data, nothing written, exit 0; IMDS down: exit 1.
    assert plain.returncode == 0, plain.stderr
    assert "no interconnect group" in plain.stdout + plain.stderr
    assert down.returncode == 1 and "503" in down.stderr
    for node in ("plain", "down"):
        assert AZURE_INTERCONNECT_GROUP not in labels(fake_kube, node)
