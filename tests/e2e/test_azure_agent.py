"""``agent --profile azure --once`` as a real process against a loopback Azure IMDS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labeler.core.node import OWNED_ANNOTATION, OWNERS_ANNOTATION
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

# Where versions before cloud-node-manager's subgroup key wrote the subgroup.
OLD_SUBGROUP = "topology-labeler.io/azure-interconnect-subgroup"


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


CNM = {AZURE_INTERCONNECT_GROUP: "g1", AZURE_INTERCONNECT_SUBGROUP: "s1"}
FIELDS = {"interconnectGroupId": "g1", "interconnectSubgroupId": "s1"}


def test_cloud_node_managers_equal_labels_are_claimed_and_a_different_one_is_kept(
    fake_kube: FakeKube, imds: FakeImds, kubeconfig: Path
) -> None:
    # cloud-node-manager labels the node from the same IMDS fields before the agent runs.
    fake_kube.add_node("same", labels=CNM)
    fake_kube.add_node("other", labels={**CNM, AZURE_INTERCONNECT_SUBGROUP: "s9"})
    for node in ("same", "other"):
        imds.set(node, COMPUTE_PATH, FIELDS)
    fake_kube.clear_journal()
    same, other = agents_once(kubeconfig, imds, "azure", "--azure-imds", "same", "other")
    assert same.returncode == 0, same.stderr
    # The claim: one patch, of our annotations only; the labels are left as they were.
    (patch,) = [r for r in fake_kube.requests(verb="patch") if r.path.endswith("/same")]
    assert "labels" not in patch.body["metadata"]
    node = fake_kube.get_node("same")["metadata"]
    assert {k: node["labels"][k] for k in CNM} == CNM
    assert set(CNM) <= set(node["annotations"][OWNED_ANNOTATION].split(","))
    # A value the cloud provider wrote differently is not ours to overwrite.
    assert other.returncode == 3, other.stderr
    assert f"{AZURE_INTERCONNECT_SUBGROUP} is 's9', wanted 's1'" in other.stderr
    assert labels(fake_kube, "other")[AZURE_INTERCONNECT_SUBGROUP] == "s9"


def test_moving_from_the_old_subgroup_key_as_the_readme_says(
    fake_kube: FakeKube, imds: FakeImds, kubeconfig: Path
) -> None:
    # A node an earlier version labeled: the subgroup under our old key, owned by the agent.
    fake_kube.add_node(
        "gb-1",
        labels={AZURE_INTERCONNECT_GROUP: "g1", OLD_SUBGROUP: "s1"},
        annotations={
            OWNED_ANNOTATION: f"{AZURE_INTERCONNECT_GROUP},{OLD_SUBGROUP}",
            OWNERS_ANNOTATION: json.dumps(
                {AZURE_INTERCONNECT_GROUP: "agent", OLD_SUBGROUP: "agent"}
            ),
        },
    )
    imds.set("gb-1", COMPUTE_PATH, FIELDS)
    (upgraded,) = agents_once(kubeconfig, imds, "azure", "--azure-imds", "gb-1")
    assert upgraded.returncode == 0, upgraded.stderr
    # Step 1: the new key is written beside the old one, which stays for the schedulers
    # still configured with it.
    got = labels(fake_kube, "gb-1")
    assert got[AZURE_INTERCONNECT_SUBGROUP] == "s1" and got[OLD_SUBGROUP] == "s1"
    # Step 2: the operator removes the old key (kubectl label … key-); the agent's next
    # reconcile forgets it in its bookkeeping and never writes it back.
    fake_kube.set_node_labels("gb-1", {OLD_SUBGROUP: None})
    (again,) = agents_once(kubeconfig, imds, "azure", "--azure-imds", "gb-1")
    assert again.returncode == 0, again.stderr
    meta = fake_kube.get_node("gb-1")["metadata"]
    assert OLD_SUBGROUP not in meta["labels"]
    assert OLD_SUBGROUP not in meta["annotations"][OWNED_ANNOTATION]
    assert OLD_SUBGROUP not in json.loads(meta["annotations"][OWNERS_ANNOTATION])
