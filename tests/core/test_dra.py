"""Devices that only DRA publishes (labeler.core.dra): which node holds which physical
device, the newest generation of each pool, the scope they put nodes in, and the exporter's
store following slices and nodes in either order."""

from __future__ import annotations

import pytest

from labeler.audit.store import NodeStore
from labeler.base.errors import InputError
from labeler.core.dra import SliceIndex, device_counts, read_slice
from labeler.core.profiles import oci_rdma
from labeler.core.scope import Scope
from labeler.core.selector import parse_selector
from labeler.core.states import node_facts
from tests.builders import node
from tests.draslices import NVIDIA, gpu_device, gpu_slice

TOPO = oci_rdma().topology


def counts(*objs: dict, drivers: tuple[str, ...] = (NVIDIA,)) -> dict:
    return device_counts([read_slice(o, "test") for o in objs], drivers)


def test_gpus_of_a_node_are_counted_under_the_driver() -> None:
    assert counts(gpu_slice("gb-1", 4), gpu_slice("gb-2", 2)) == {
        "gb-1": ((NVIDIA, 4),),
        "gb-2": ((NVIDIA, 2),),
    }
    assert counts(gpu_slice("gb-1", 4, driver="other.example.com")) == {}


def test_mig_partitions_count_as_their_gpu() -> None:
    """NVIDIA's driver publishes the whole GPU and its MIG devices (parentUUID): 4 GPUs."""
    assert counts(gpu_slice("gb-1", 4, mig=7)) == {"gb-1": ((NVIDIA, 4),)}
    # Ampere with MIG on: only the partitions are published; still one per GPU.
    only_mig = gpu_slice("gb-1", 2, mig=3)
    only_mig["spec"]["devices"] = [
        d for d in only_mig["spec"]["devices"] if d["attributes"]["type"]["string"] == "mig"
    ]
    assert counts(only_mig) == {"gb-1": ((NVIDIA, 2),)}


def test_attributes_may_name_the_driver_and_devices_without_ids_count_by_name() -> None:
    s = gpu_slice("gb-1", 0, devices=[{"name": "a"}, {"name": "b"}])
    qualified = gpu_device("gb-1", 0)
    qualified["attributes"] = {f"{NVIDIA}/uuid": qualified["attributes"]["uuid"]}
    twin = {**qualified, "name": "gpu-0-vfio"}  # the same GPU published twice
    s["spec"]["devices"] += [qualified, twin]
    assert counts(s) == {"gb-1": ((NVIDIA, 3),)}


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = gpu_slice("gb-1", 4, generation=1, name="old")
    new = gpu_slice("gb-1", 2, generation=2, name="new")
    assert counts(old, new) == {"gb-1": ((NVIDIA, 2),)}
    # Two slices of one pool at one generation add up.
    a = gpu_slice("gb-1", 2, name="a")
    b = gpu_slice("gb-1", 0, name="b", devices=[gpu_device("gb-1", 7)])
    assert counts(a, b) == {"gb-1": ((NVIDIA, 3),)}


def test_tainted_and_network_attached_devices_are_not_a_nodes() -> None:
    sick = gpu_slice("gb-1", 0, devices=[gpu_device("gb-1", 0, taint="NoSchedule")])
    sick["spec"]["devices"] += [gpu_device("gb-1", 1, taint="PreferNoSchedule")]
    assert counts(sick) == {"gb-1": ((NVIDIA, 1),)}
    shared = gpu_slice("x", 4, name="shared")
    del shared["spec"]["nodeName"]
    shared["spec"]["allNodes"] = True
    assert counts(shared) == {}
    per_device = gpu_slice("x", 0, name="per-device")
    del per_device["spec"]["nodeName"]
    per_device["spec"]["perDeviceNodeSelection"] = True
    per_device["spec"]["devices"] = [
        {**gpu_device("gb-7", 0), "nodeName": "gb-7"},
        {**gpu_device("gb-8", 0), "nodeName": "gb-8"},
        {**gpu_device("gb-9", 0), "allNodes": True},
    ]
    assert counts(per_device) == {"gb-7": ((NVIDIA, 1),), "gb-8": ((NVIDIA, 1),)}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["spec"].pop("driver"), "spec.driver and spec.pool are required"),
        (lambda s: s["spec"]["pool"].update(generation="2"), "generation is not a number"),
        (lambda s: s["spec"]["devices"][0].pop("name"), r"spec.devices\[0\] has no name"),
        (lambda s: s.pop("spec"), "needs metadata.name and spec"),
    ],
)
def test_a_broken_slice_names_itself(change, message: str) -> None:
    s = gpu_slice("gb-1", name="s1")
    change(s)
    with pytest.raises(InputError, match=message):
        read_slice(s, "snap.yaml: items[3]")


def test_the_index_says_which_nodes_a_change_touches() -> None:
    index = SliceIndex((NVIDIA,))
    first = read_slice(gpu_slice("gb-1", 4, name="s1"), "t")
    assert index.put(first) == {"gb-1"}
    assert index.devices("gb-1") == ((NVIDIA, 4),)
    # The driver republishes the pool at a newer generation in a second slice.
    newer = read_slice(gpu_slice("gb-1", 3, generation=2, name="s2"), "t")
    assert index.put(newer) == {"gb-1"}
    assert index.devices("gb-1") == ((NVIDIA, 3),)
    assert index.remove("s2") == {"gb-1"}
    assert index.devices("gb-1") == ((NVIDIA, 4),)
    assert index.replace(NVIDIA, []) == {"gb-1"}
    assert index.devices("gb-1") == () and index.counts() == {}
    assert index.put(read_slice(gpu_slice("gb-2", 1, driver="x.example.com"), "t")) == set()


def test_scope_takes_dra_nodes_in_and_counts_their_devices() -> None:
    dra_only = node("gb-1").info()
    devices = ((NVIDIA, 4),)
    scope = Scope()
    assert "or with gpu.nvidia.com devices (DRA)" in scope.describe()
    assert node_facts(TOPO, scope, dra_only) is None
    facts = node_facts(TOPO, scope, dra_only, devices)
    assert facts is not None and facts.accelerators == ((NVIDIA, 4),)
    both = node("gb-2").allocatable({"nvidia.com/gpu": "4"}).info()
    facts = node_facts(TOPO, scope, both, devices)
    assert facts is not None and facts.accelerators == ((NVIDIA, 4), ("nvidia.com/gpu", 4))
    # Without drivers (--dra-driver none) the devices are ignored, as before DRA.
    assert node_facts(TOPO, Scope(dra_drivers=()), dra_only, devices) is None
    # A selector decides alone; the devices are still counted.
    selected = Scope(selector=parse_selector("pool=gb"))
    facts = node_facts(TOPO, selected, node("gb-3").labels({"pool": "gb"}).info(), devices)
    assert facts is not None and facts.accelerators == devices
    assert selected.split([dra_only], {"gb-1": devices}) == ([], 1)
    assert scope.split([dra_only], {"gb-1": devices}) == ([dra_only], 0)


def test_store_follows_slices_and_nodes_in_either_order() -> None:
    store = NodeStore(TOPO, Scope())
    s1 = read_slice(gpu_slice("gb-1", 4, name="s1"), "t")
    assert store.apply_slice("ADDED", s1) is False  # no such node yet
    store.changed.clear()
    assert store.apply("ADDED", node("gb-1").info()) is True  # its slice puts it in scope
    assert store.changed.is_set()
    (facts,) = store.snapshot()[1]
    assert facts.accelerators == ((NVIDIA, 4),)
    assert store.apply("MODIFIED", node("gb-1").info()) is False  # a heartbeat: nothing changed
    assert store.apply("ADDED", node("cpu-1").info()) is False  # a CPU node: out of scope
    # The driver adds a slice for cpu-1 (its GPUs arrived): in scope without a node event.
    s2 = read_slice(gpu_slice("cpu-1", 2, name="s2"), "t")
    assert store.apply_slice("ADDED", s2) is True and len(store) == 2
    assert store.apply_slice("DELETED", s1) is True
    assert {f.name for f in store.snapshot()[1]} == {"cpu-1"}
    assert store.replace_slices(NVIDIA, []) is True and len(store) == 0
    store.replace([node("gb-1").info(), node("cpu-1").info()])
    assert len(store) == 0
    store.replace_slices(NVIDIA, [s1])
    assert [f.name for f in store.snapshot()[1]] == ["gb-1"]
    assert store.apply("DELETED", node("gb-1").info()) is True and len(store) == 0
