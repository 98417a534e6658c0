"""ResourceSlices as NVIDIA's DRA driver for GPUs publishes them (its kubelet plugin,
kubernetes-sigs/dra-driver-nvidia-gpu): one pool per node named after the node, a device
``gpu-<i>`` per GPU with the string attributes ``type`` (``gpu``) and ``uuid``, and, with
MIG, devices ``gpu-<i>-mig-…`` of type ``mig`` naming their GPU in ``parentUUID``."""

from __future__ import annotations

import hashlib
from typing import Any

NVIDIA = "gpu.nvidia.com"


def gpu_uuid(node: str, i: int) -> str:
    return f"GPU-{hashlib.sha256(node.encode()).hexdigest()[:8]}-0000-4000-8000-{i:012d}"


def gpu_device(node: str, i: int, *, taint: str | None = None) -> dict[str, Any]:
    device: dict[str, Any] = {
        "name": f"gpu-{i}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": gpu_uuid(node, i)},
            "productName": {"string": "NVIDIA GB200"},
        },
        "capacity": {"memory": {"value": "189471Mi"}},
    }
    if taint:
        device["taints"] = [{"key": "gpu.nvidia.com/unhealthy", "effect": taint}]
    return device


def mig_device(node: str, i: int, part: int) -> dict[str, Any]:
    return {
        "name": f"gpu-{i}-mig-1g24gb-{part}",
        "attributes": {
            "type": {"string": "mig"},
            "parentUUID": {"string": gpu_uuid(node, i)},
            "profile": {"string": "1g.24gb"},
        },
    }


def gpu_slice(
    node: str,
    gpus: int = 4,
    *,
    mig: int = 0,
    driver: str = NVIDIA,
    generation: int = 1,
    name: str | None = None,
    devices: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A slice of ``gpus`` GPUs on ``node`` (plus ``mig`` MIG devices on each GPU)."""
    if devices is None:
        devices = []
        for i in range(gpus):
            devices.append(gpu_device(node, i))
            devices += [mig_device(node, i, p) for p in range(mig)]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-{driver}-x7k2p"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }
