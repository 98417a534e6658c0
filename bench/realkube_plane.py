"""What bench/realkube.py's two benchmarks share: the control plane, an admin HTTP client
for setting up (never measured), nodes shaped like a kubelet's, and the counters read from
/proc and from the API server's /metrics."""

from __future__ import annotations

import http.client
import json
import os
import re
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.realkube.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "control-plane.sh"
NEEDED = ("etcd", "kube-apiserver", "kubectl")
TICK = os.sysconf("SC_CLK_TCK")
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def bin_dir() -> Path:
    """The control plane's binaries, built by scripts/control-plane.sh if one is missing."""
    folder = Path(
        subprocess.run(
            [str(SCRIPT), "bin"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    if not all((folder / name).exists() for name in NEEDED):
        print("building the control plane (scripts/control-plane.sh build; minutes when cold)")
        subprocess.run([str(SCRIPT), "build"], check=True)
    return folder


def start_plane(workdir: Path) -> ControlPlane:
    """etcd and kube-apiserver only (no scheduler, and no KWOK to heartbeat the nodes), in a
    new folder under ``workdir``: each run starts from an empty etcd."""
    plane = ControlPlane(Path(tempfile.mkdtemp(prefix="plane-", dir=workdir)), bin_dir())
    plane.prepare()
    try:
        for name in ("etcd", "kube-apiserver"):
            plane.launch(name)
        plane.wait_ready(120)
    except BaseException:
        plane.stop()
        raise
    return plane


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + sys) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Admin:
    """Keep-alive HTTPS to the API server as a member of system:masters, one connection per
    thread: creating and resetting the nodes, outside every measured interval."""

    def __init__(self, plane: ControlPlane) -> None:
        pair = plane.ca.issue("bench-admin", "bench-admin", ("system:masters",))
        self.context = ssl.create_default_context(cafile=str(plane.ca.cert))
        self.context.load_cert_chain(str(pair.cert), str(pair.key))
        self.port = plane.api_port
        self.local = threading.local()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type, "Accept": accept}
        for retry in (False, True):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = http.client.HTTPSConnection(
                    "127.0.0.1", self.port, context=self.context, timeout=60
                )
                self.local.conn = conn
            try:
                conn.request(method, path, data, headers)
                answer = conn.getresponse()
                payload = answer.read()
                break
            except (http.client.RemoteDisconnected, ConnectionError):
                # A keep-alive connection the server closed while it sat idle: once more
                # on a new one.
                conn.close()
                self.local.conn = None
                if retry:
                    raise
        if answer.status >= 300:
            raise RuntimeError(f"{method} {path}: {answer.status} {payload[:500]!r}")
        return json.loads(payload) if payload else None

    def each(self, fn: Callable[[str], object], names: Iterable[str], workers: int = 8) -> None:
        with ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(fn, names):
                pass

    def create_nodes(self, names: list[str], images: int) -> None:
        self.each(
            lambda name: self.request("POST", "/api/v1/nodes", node_body(name, images)), names
        )

    def remove_labels(self, names: list[str], keys: Iterable[str]) -> None:
        patch = {"metadata": {"labels": dict.fromkeys(keys)}}
        self.each(
            lambda name: self.request(
                "PATCH", f"/api/v1/nodes/{name}", patch, "application/merge-patch+json"
            ),
            names,
        )

    def count_labelled(self, key: str) -> int:
        answer = self.request("GET", f"/api/v1/nodes?labelSelector={key}", accept=METADATA_LIST)
        return len(answer.get("items") or [])

    def labels(self, name: str) -> dict[str, str]:
        return dict(self.request("GET", f"/api/v1/nodes/{name}")["metadata"].get("labels") or {})


def node_body(name: str, images: int) -> dict[str, Any]:
    """A Node as a kubelet of a GPU host registers it (the server keeps a Node's status on
    create). Its size matters: every PATCH makes the server decode, patch, encode and store
    the whole object."""
    resources = {
        "cpu": "112",
        "memory": "2113368Mi",
        "nvidia.com/gpu": "8",
        "pods": "110",
        "ephemeral-storage": "3840Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    conditions = [
        {
            "type": kind,
            "status": "False",
            "reason": f"KubeletHas{reason}",
            "message": f"kubelet has {reason.lower()}",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        for kind, reason in (
            ("MemoryPressure", "SufficientMemory"),
            ("DiskPressure", "NoDiskPressure"),
            ("PIDPressure", "SufficientPID"),
        )
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
            },
        },
        "spec": {"providerID": f"oci://ocid1.instance.oc1.iad.{name}"},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "machineID": "0" * 32,
                "systemUUID": "0" * 32,
                "bootID": "0" * 32,
                "kernelVersion": "6.8.0-1021-oracle",
                "osImage": "Ubuntu 24.04.1 LTS",
                "containerRuntimeVersion": "containerd://2.0.2",
                "kubeletVersion": "v1.37.2",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": [
                {
                    "names": [
                        f"registry.example/team/image-{k}@sha256:{k:064x}",
                        f"registry.example/team/image-{k}:v1.{k}",
                    ],
                    "sizeBytes": 100_000_000 + k,
                }
                for k in range(images)
            ],
        },
    }


REQUEST_LINE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
LABEL = re.compile(r'(\w+)="([^"]*)"')


def metric_lines(plane: ControlPlane) -> list[str]:
    return plane.kubectl("get", "--raw", "/metrics").stdout.splitlines()


def request_counts(lines: list[str]) -> dict[tuple[str, str], int]:
    """apiserver_request_total summed by (verb, resource[/subresource]) over codes and the
    rest; requests for non-resource URLs (/metrics itself) are left out."""
    counts: dict[tuple[str, str], int] = {}
    for line in lines:
        match = REQUEST_LINE.match(line)
        if match is None:
            continue
        labels = dict(LABEL.findall(match["labels"]))
        resource = labels.get("resource", "")
        if not resource:
            continue
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        key = (labels.get("verb", "?"), resource)
        counts[key] = counts.get(key, 0) + int(float(match["value"]))
    return counts


def delta(
    after: dict[tuple[str, str], int], before: dict[tuple[str, str], int]
) -> dict[tuple[str, str], int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
