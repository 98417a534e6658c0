"""A large synthetic GPU cluster for the map's browser tests and ``bench/map.py``: nodes
like real ones (16 labels each, 4 of them unique to the node; 8 GPUs, some busy; 3 %
partial, 2 % unlabeled, 1 % tainted; 20 nodes per local block, 400 per network block,
2,000 per island)."""

from __future__ import annotations

import random

from labeler.core.capacity import Node
from labeler.core.node import Taint
from labeler.core.profiles import oci_rdma
from labeler.core.scope import Scope
from labeler.topomap.model import TopologyMap, build_map, details_from_nodes, facts_from_nodes

P = "oci.oraclecloud.com/rdma."
SHARED = {
    "beta.kubernetes.io/arch": "amd64",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "8",
    "topology.kubernetes.io/region": "us-ashburn-1",
    "topology.kubernetes.io/zone": "US-ASHBURN-AD-1",
    "oci.oraclecloud.com/fault-domain": "FAULT-DOMAIN-1",
}


def nodes(n: int, seed: int = 7) -> list[Node]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        name = f"gpu-{i:05d}"
        labels = dict(SHARED)
        labels["kubernetes.io/hostname"] = name
        labels["displayName"] = f"inst-{rng.getrandbits(40):x}"
        labels["internal_addr"] = f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"
        labels["oci.oraclecloud.com/host.serial_number"] = f"{rng.getrandbits(48):012x}"
        levels = {
            P + "hpc_island_id": f"island-{i // 2000}",
            P + "network_block_id": f"nb-{i // 400}",
            P + "local_block_id": f"lb-{i // 20}",
        }
        roll = rng.random()
        if roll < 0.02:
            levels = {}
        elif roll < 0.05:
            levels.pop(P + "local_block_id")
        labels.update(levels)
        taints = (Taint("nvidia.com/gpu-health", "degraded", "NoSchedule"),) if roll > 0.99 else ()
        used = {"nvidia.com/gpu": rng.choice((0, 0, 4, 8, 8))}
        out.append(Node(name, labels, {"nvidia.com/gpu": 8, "cpu": 224000}, used, taints))
    return out


def map_of(data: list[Node]) -> TopologyMap:
    """The map of ``data`` as ``map --from-snapshot`` builds it (oci-rdma, default scope)."""
    topology = oci_rdma().topology
    facts = facts_from_nodes(topology, Scope(), data)
    details = details_from_nodes(data, {f.name: [r for r, _ in f.accelerators] for f in facts})
    return build_map(
        topology, facts, profile="oci-rdma", scope="bench", origin="bench", details=details
    )
