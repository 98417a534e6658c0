"""Accelerators that only Dynamic Resource Allocation publishes: ResourceSlices per node.

On a node whose GPUs come from a DRA driver (NVIDIA's ``gpu.nvidia.com``), the GPUs are not
in the node's allocatable; the driver publishes them as devices in ResourceSlices
(``resource.k8s.io/v1``, cluster-scoped). This module counts them per node, so that such a
node is in the default scope of ``audit``, ``check``, ``map`` and ``advise`` with its devices
counted, under the driver's name (``gpu.nvidia.com: 4``).

The rules, from the ResourceSlice API (``k8s.io/api/resource/v1``):

- A pool (driver, pool name) may span several slices; a consumer uses only the slices of
  the pool's highest ``spec.pool.generation`` and ignores older ones (a driver rewriting a
  pool bumps it on every slice).
- A slice names its node in ``spec.nodeName``; with ``spec.perDeviceNodeSelection`` each
  device names its own ``nodeName``. Devices offered by node selector or to all nodes
  (network-attached) belong to no one node and are not counted.
- One GPU may be published several times — the whole GPU and its MIG partitions (NVIDIA's
  driver, partitionable devices), or a GPU and its VFIO passthrough form — so devices are
  counted by the physical device they stand for: the ``parentUUID`` attribute (a MIG
  device's GPU), else ``uuid``, else the device's own name. Attributes may be spelled with
  the driver's domain (``gpu.nvidia.com/uuid``).
- A device tainted ``NoSchedule`` or ``NoExecute`` takes no new pod, as an unhealthy GPU
  drops out of a device plugin's allocatable: it is not counted.

What DRA claims hold (which devices are allocated) is not read: free capacity of DRA
devices is not known.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from labeler.base.errors import InputError

# NVIDIA's DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu, its kubelet plugin).
NVIDIA_GPU_DRIVER = "gpu.nvidia.com"
DEFAULT_DRIVERS: tuple[str, ...] = (NVIDIA_GPU_DRIVER,)
API_VERSION = "resource.k8s.io/v1"
# The device attributes that name the physical device, most specific first.
_IDENTITY = ("parentUUID", "uuid")
_UNSCHEDULABLE = ("NoSchedule", "NoExecute")

Devices = tuple[tuple[str, int], ...]
"""(driver, device count) of one node, sorted; only drivers with devices."""


@dataclass(frozen=True, slots=True)
class SliceDevices:
    """What one ResourceSlice says about node-local devices: which node holds each."""

    name: str
    driver: str
    pool: str
    generation: int
    devices: tuple[tuple[str, str], ...]  # (node, physical device), one per device listed

    @property
    def nodes(self) -> frozenset[str]:
        return frozenset(node for node, _ in self.devices)


def read_slice(obj: Mapping[str, Any], where: str) -> SliceDevices:
    """A ResourceSlice object → its node-local devices; InputError names what is missing."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(spec, Mapping) or not isinstance(name, str):
        raise InputError(f"{where}: a ResourceSlice needs metadata.name and spec")
    driver, pool = spec.get("driver"), spec.get("pool")
    if not isinstance(driver, str) or not driver or not isinstance(pool, Mapping):
        raise InputError(f"{where}: ResourceSlice {name}: spec.driver and spec.pool are required")
    generation = pool.get("generation", 0)
    if not isinstance(generation, int) or isinstance(generation, bool):
        raise InputError(f"{where}: ResourceSlice {name}: spec.pool.generation is not a number")
    slice_node = spec.get("nodeName")
    per_device = spec.get("perDeviceNodeSelection") is True
    devices = []
    for i, device in enumerate(spec.get("devices") or []):
        if not isinstance(device, Mapping) or not isinstance(device.get("name"), str):
            raise InputError(f"{where}: ResourceSlice {name}: spec.devices[{i}] has no name")
        node = device.get("nodeName") if per_device else slice_node
        if isinstance(node, str) and node and _schedulable(device):
            devices.append((node, _identity(device, driver)))
    return SliceDevices(name, driver, str(pool.get("name", "")), generation, tuple(devices))


def _identity(device: Mapping[str, Any], driver: str) -> str:
    attributes = device.get("attributes") or {}
    for attr in _IDENTITY:
        for key in (attr, f"{driver}/{attr}"):
            value = attributes.get(key) if isinstance(attributes, Mapping) else None
            if isinstance(value, Mapping) and isinstance(value.get("string"), str):
                return f"uuid={value['string']}"  # a MIG device's parentUUID is its GPU's uuid
    return f"name={device['name']}"


def _schedulable(device: Mapping[str, Any]) -> bool:
    taints = device.get("taints") or []
    return not any(isinstance(t, Mapping) and t.get("effect") in _UNSCHEDULABLE for t in taints)


class SliceIndex:
    """The slices of some drivers, by name, with each node's device count. Incremental: the
    audit exporter applies one watch event at a time and learns which nodes changed."""

    def __init__(self, drivers: Collection[str]) -> None:
        self.drivers = frozenset(drivers)
        self._slices: dict[str, SliceDevices] = {}
        self._pools: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
        self._node_pools: defaultdict[str, set[tuple[str, str]]] = defaultdict(set)

    def put(self, s: SliceDevices) -> set[str]:
        """Add or replace a slice (by name); the nodes whose count may have changed."""
        touched = self.remove(s.name)
        if s.driver not in self.drivers:
            return touched
        self._slices[s.name] = s
        pool = (s.driver, s.pool)
        self._pools[pool].add(s.name)
        for node in s.nodes:
            self._node_pools[node].add(pool)
        return touched | self._pool_nodes(pool)

    def remove(self, name: str) -> set[str]:
        """Drop a slice (by name); the nodes whose count may have changed."""
        old = self._slices.get(name)
        if old is None:
            return set()
        pool = (old.driver, old.pool)
        touched = self._pool_nodes(pool)
        del self._slices[name]
        self._pools[pool].discard(name)
        if not self._pools[pool]:
            del self._pools[pool]
        for node in old.nodes - self._pool_nodes(pool):
            self._node_pools[node].discard(pool)
            if not self._node_pools[node]:
                del self._node_pools[node]
        return touched

    def replace(self, driver: str, slices: Iterable[SliceDevices]) -> set[str]:
        """Start one driver over from a full LIST; the nodes whose count may have changed."""
        touched: set[str] = set()
        for name in [n for n, s in self._slices.items() if s.driver == driver]:
            touched |= self.remove(name)
        for s in slices:
            touched |= self.put(s)
        return touched

    def devices(self, node: str) -> Devices:
        """The node's devices per driver, from each pool's newest generation."""
        ids: defaultdict[str, set[str]] = defaultdict(set)
        for pool in self._node_pools.get(node, ()):
            current = self._in_pool(pool)
            newest = max(s.generation for s in current)
            for s in current:
                if s.generation == newest:
                    ids[s.driver].update(d for n, d in s.devices if n == node)
        return tuple(sorted((driver, len(found)) for driver, found in ids.items() if found))

    def counts(self) -> dict[str, Devices]:
        """Every node with devices → its devices."""
        return {node: d for node in self._node_pools if (d := self.devices(node))}

    def _in_pool(self, pool: tuple[str, str]) -> list[SliceDevices]:
        return [self._slices[name] for name in self._pools.get(pool, ())]

    def _pool_nodes(self, pool: tuple[str, str]) -> set[str]:
        return {node for s in self._in_pool(pool) for node in s.nodes}


def device_counts(slices: Iterable[SliceDevices], drivers: Collection[str]) -> dict[str, Devices]:
    """Node → its devices of ``drivers`` (one-shot readers: a LIST or a snapshot file)."""
    index = SliceIndex(drivers)
    for s in slices:
        index.put(s)
    return index.counts()
