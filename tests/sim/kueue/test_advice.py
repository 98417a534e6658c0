"""Advice on top of the simulator: which nodes Kueue sees, the narrowest level that fits,
and the annotations/stanzas to paste."""

from __future__ import annotations

import json

import pytest

from labeler.base.errors import UsageError
from labeler.core.profiles import oci_rdma
from labeler.sim.common.shape import PodShape
from labeler.sim.kueue.advice import (
    SLICE_CONSTRAINTS_ANNOTATION,
    advise,
    make_job,
    resolve_level,
    volcano_network_topology,
)
from labeler.sim.kueue.assign import Mode
from tests.builders import node
from tests.sim.kueue.objects import gpu_nodes, tree_of

OCI = oci_rdma().topology
KEYS = list(OCI.keys)
ISLAND, NB, LB = KEYS
GPU8 = PodShape({"nvidia.com/gpu": 8})


def oci_cluster() -> list[dict[str, object]]:
    """island i ⊃ nb1 ⊃ {lb1: 4 nodes, 2 busy; lb2: 4 nodes, 1 busy}, nb2 ⊃ lb3: 2 nodes."""
    spec = []
    for lb, nb, names, busy in (
        ("lb1", "nb1", ["a1", "a2", "a3", "a4"], {"a1", "a2"}),
        ("lb2", "nb1", ["b1", "b2", "b3", "b4"], {"b1"}),
        ("lb3", "nb2", ["c1", "c2"], set()),
    ):
        for n in names:
            spec.append((("i", nb, lb), n, 8, 8 if n in busy else 0))
    return gpu_nodes(KEYS, spec)


def test_levels_by_key_or_name() -> None:
    assert resolve_level(OCI, "local_block") == 2
    assert resolve_level(OCI, LB) == 2
    assert resolve_level(OCI, "hostname") == 3
    assert resolve_level(OCI, "kubernetes.io/hostname") == 3
    with pytest.raises(UsageError, match=r"no level 'rack'.*local_block"):
        resolve_level(OCI, "rack")


def test_job_validation_like_kueues_webhook() -> None:
    with pytest.raises(UsageError, match="evenly divide"):
        make_job(OCI, 6, mode=Mode.REQUIRED, level="local_block", slices=[("hostname", 4)])
    with pytest.raises(UsageError, match="at most 3"):
        make_job(OCI, 8, mode=Mode.REQUIRED, level="hpc_island", slices=[("hostname", 1)] * 4)
    with pytest.raises(UsageError, match="at least 1"):
        make_job(OCI, 0, mode=Mode.UNCONSTRAINED, level=None)


def test_why_pending_and_what_would_fit() -> None:
    tree = tree_of(OCI, oci_cluster(), topology_name="oci-rdma")
    job = make_job(OCI, 4, mode=Mode.REQUIRED, level="local_block")
    adv = advise(OCI, tree, GPU8, job)
    assert not adv.outcome.fits
    assert adv.outcome.message == (
        'topology "oci-rdma" allows to fit only 3 out of 4 pod(s). '
        'Total nodes: 10; excluded: resource "nvidia.com/gpu": 3'
    )
    assert adv.narrowest_now == 1  # nb1 has 5 free
    assert adv.narrowest_empty == 2  # lb1 or lb2 hold 4 when empty
    assert adv.suggested_level == 1
    assert adv.annotations == {"kueue.x-k8s.io/podset-required-topology": NB}
    assert adv.volcano == {
        "networkTopology": {
            "mode": "hard",
            "highestTierName": "oci.oraclecloud.com/rdma.network_block_id",
        }
    }
    assert adv.volcano_legacy == {"networkTopology": {"mode": "hard", "highestTierAllowed": 2}}


def test_fits_reports_the_level_of_the_placement() -> None:
    tree = tree_of(OCI, oci_cluster())
    adv = advise(OCI, tree, GPU8, make_job(OCI, 3, mode=Mode.PREFERRED, level="local_block"))
    assert adv.outcome.fits and adv.level == 2
    assert {a.node for a in adv.outcome.assignment} == {"b2", "b3", "b4"}
    assert adv.annotations == {"kueue.x-k8s.io/podset-preferred-topology": LB}
    assert adv.volcano == {
        "networkTopology": {
            "mode": "soft",
            "highestTierName": "oci.oraclecloud.com/rdma.local_block_id",
        }
    }


def test_unconstrained_gets_the_unconstrained_annotation_and_no_volcano_stanza() -> None:
    tree = tree_of(OCI, oci_cluster())
    adv = advise(OCI, tree, GPU8, make_job(OCI, 7, mode=Mode.UNCONSTRAINED, level=None))
    assert adv.outcome.fits and adv.level == 0  # spans both network blocks
    assert adv.annotations == {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}
    assert adv.volcano is None


def test_slice_annotations() -> None:
    tree = tree_of(OCI, oci_cluster())
    two = make_job(OCI, 4, mode=Mode.REQUIRED, level="network_block", slices=[("local_block", 2)])
    adv = advise(OCI, tree, GPU8, two)
    assert adv.annotations == {
        "kueue.x-k8s.io/podset-required-topology": NB,
        "kueue.x-k8s.io/podset-slice-required-topology": LB,
        "kueue.x-k8s.io/podset-slice-size": "2",
    }
    three = make_job(
        OCI,
        4,
        mode=Mode.REQUIRED,
        level="hpc_island",
        slices=[("network_block", 4), ("hostname", 1)],
    )
    adv = advise(OCI, tree, GPU8, three)
    assert json.loads(adv.annotations[SLICE_CONSTRAINTS_ANNOTATION]) == [
        {"topology": NB, "size": 4},
        {"topology": "kubernetes.io/hostname", "size": 1},
    ]


def test_nothing_fits_even_empty() -> None:
    tree = tree_of(OCI, oci_cluster())
    adv = advise(OCI, tree, GPU8, make_job(OCI, 11, mode=Mode.REQUIRED, level="hpc_island"))
    assert adv.narrowest_now is None and adv.narrowest_empty is None
    assert adv.annotations == {} and adv.volcano is None


def test_nodes_kueue_cannot_see_are_named_with_the_reason() -> None:
    items = oci_cluster()
    items.append(
        node("nolabel")
        .hostname()
        .labels({ISLAND: "i", NB: "nb2"})
        .allocatable(cpu="4", pods="110")
        .obj()
    )
    items.append(
        node("sick")
        .hostname()
        .labels({ISLAND: "i", NB: "nb2", LB: "lb3"})
        .allocatable(cpu="4", pods="110")
        .ready(False)
        .obj()
    )
    items.append(
        node("cordoned")
        .hostname()
        .labels({ISLAND: "i", NB: "nb2", LB: "lb3"})
        .allocatable(cpu="4", pods="110")
        .unschedulable(True)
        .obj()
    )
    items.append(
        node("cpu-only")
        .hostname()
        .labels({ISLAND: "i", NB: "nb2", LB: "lb3", "pool": "cpu"})
        .allocatable(cpu="4", pods="110")
        .obj()
    )
    empty_value = (
        node("empty")
        .hostname()
        .labels({ISLAND: "i", NB: "nb2", LB: ""})
        .allocatable(cpu="4", pods="110")
        .obj()
    )
    empty_value["metadata"]["labels"]["pool"] = "gpu"  # type: ignore[index]
    items.append(empty_value)
    for it in items:
        if it["kind"] == "Node" and it["metadata"]["name"] != "cpu-only":  # type: ignore[index]
            it["metadata"]["labels"].setdefault("pool", "gpu")  # type: ignore[index]
    tree = tree_of(OCI, items, flavor_labels={"pool": "gpu"})
    reasons = {o.node: o.reason for o in tree.outside}
    assert reasons == {
        "nolabel": f"missing level label {LB}",
        "sick": "not Ready",
        "cordoned": "cordoned (spec.unschedulable)",
        "cpu-only": "does not match flavor node label pool=gpu",
    }
    assert "empty" in {leaf.node.name for leaf in tree.leaves if leaf.node}  # "" counts


def test_volcano_hostname_maps_to_the_narrowest_tier() -> None:
    assert volcano_network_topology(OCI, Mode.REQUIRED, 3) == {
        "networkTopology": {
            "mode": "hard",
            "highestTierName": "oci.oraclecloud.com/rdma.local_block_id",
        }
    }
    assert volcano_network_topology(OCI, Mode.REQUIRED, 0, legacy=True) == {
        "networkTopology": {"mode": "hard", "highestTierAllowed": 3}
    }
