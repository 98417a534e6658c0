"""The exporter's store of Kueue's objects: when a watched Workload makes it read the
Topologies and ResourceFlavors again."""

from __future__ import annotations

from typing import Any

from labeler.audit.kueue_watch import KueueStore
from tests.sim.kueue.objects import flavor


def admitted(flavor: str) -> dict[str, Any]:
    psa = {"name": "main", "flavors": {"nvidia.com/gpu": flavor}, "count": 1}
    return {
        "kind": "Workload",
        "metadata": {"namespace": "team-a", "name": "train"},
        "status": {"admission": {"clusterQueue": "gpu", "podSetAssignments": [psa]}},
    }


def test_a_flavor_or_its_topology_not_read_yet_asks_for_a_new_read() -> None:
    store = KueueStore()
    assert store.unknown_flavor(admitted("h100"))  # nothing read yet
    # The flavor was read, its Topology not (created between the two LISTs): read again.
    store.set_topology([flavor("h100", "default")])
    assert store.unknown_flavor(admitted("h100"))
    store.set_topology(
        [{"kind": "Topology", "metadata": {"name": "default"}}, flavor("h100", "default")]
    )
    assert not store.unknown_flavor(admitted("h100"))
    # A flavor without a topology needs none; another flavor's missing Topology is no reason.
    store.set_topology([flavor("cpu", None), flavor("a100", "other")])
    assert not store.unknown_flavor(admitted("cpu"))
