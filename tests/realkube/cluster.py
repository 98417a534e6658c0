"""Objects on the real API server, made the way the cluster's own components make them:
nodes registered with a Ready status (there is no kubelet), the agent's manifests applied
with the real kubectl, and the agent's identity as a pod-bound ServiceAccount token."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import kubernetes
import yaml

from tests.realkube.controlplane import KWOK_ANNOTATION, ControlPlane

ROOT = Path(__file__).resolve().parents[2]
AGENT_NS = "topology-labeler"
AGENT_SA = "topology-labeler-agent"


def api_client(plane: ControlPlane, kubeconfig: Path | None = None) -> kubernetes.client.ApiClient:
    return kubernetes.config.new_client_from_config(config_file=str(kubeconfig or plane.kubeconfig))


def core(plane: ControlPlane, kubeconfig: Path | None = None) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client(plane, kubeconfig))


def node_body(
    name: str,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    kwok: bool = False,
    **metadata: Any,
) -> dict[str, Any]:
    """A Node as a kubelet registers it (``kubernetes.io/hostname``, os, arch), before its
    status. ``kwok`` hands it to KWOK, which then keeps it Ready and runs its pods."""
    notes = dict(annotations or {})
    if kwok:
        notes[KWOK_ANNOTATION] = "fake"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **(labels or {}),
            },
            "annotations": notes,
            **metadata,
        },
        "spec": {"taints": taints or []},
    }


def ready_status(allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", **(allocatable or {})}
    return {
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "registered by the test",
                }
            ],
        }
    }


def add_node(
    plane: ControlPlane, name: str, allocatable: dict[str, str] | None = None, **kw: Any
) -> None:
    """A node as it stands once registered and Ready: its status set, and the
    ``node.kubernetes.io/not-ready`` taint that the API server's TaintNodesByCondition
    admission gives every new node taken off again, as the node lifecycle controller of
    kube-controller-manager (which this control plane does not run) would."""
    api = core(plane)
    body = node_body(name, **kw)
    api.create_node(body)
    api.patch_node_status(name, ready_status(allocatable))
    # Taints have no merge key: the patch sets the whole list, the one the node was made with.
    api.patch_node(name, {"spec": {"taints": body["spec"]["taints"] or None}})


def get_node(plane: ControlPlane, name: str) -> dict[str, Any]:
    out = plane.kubectl("get", "node", name, "-o", "json").stdout
    node: dict[str, Any] = json.loads(out)
    return node


def labels_of(plane: ControlPlane, name: str) -> dict[str, str]:
    return dict(get_node(plane, name)["metadata"].get("labels") or {})


def delete_nodes(plane: ControlPlane, *names: str) -> None:
    if names:
        plane.kubectl("delete", "node", "--ignore-not-found", "--wait=false", *names)


# Nodes made in bulk carry this label, so that one LIST-and-delete removes them: naming
# each node makes kubectl read it first, which costs minutes for a thousand.
SET_LABEL = "test.topology-labeler.io/set"


def create_nodes(plane: ControlPlane, names: list[str], work: Path, group: str) -> None:
    """Bare nodes (no status), created in one kubectl call, labeled as ``group``."""
    items = [node_body(name, labels={SET_LABEL: group}) for name in names]
    listing = work / f"nodes-{group}.json"
    listing.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    plane.kubectl("create", "-f", str(listing))


def delete_set(plane: ControlPlane, group: str) -> None:
    plane.kubectl("delete", "nodes", "-l", f"{SET_LABEL}={group}", "--wait=false")


def deploy_agent(plane: ControlPlane, kustomization: str = "manifests") -> None:
    """The agent's namespace, ServiceAccount, RBAC and admission policy, as an operator
    applies them (``kubectl apply -k``). Without a controller manager the DaemonSet makes
    no pods; the tests run the agent themselves under its identity."""
    plane.kubectl("apply", "--server-side", "-k", str(ROOT / kustomization))


def agent_kubeconfig(plane: ControlPlane, node: str) -> Path:
    """A kubeconfig with the agent's identity on ``node``: a token bound to a pod of the
    agent's ServiceAccount that runs there, as the kubelet mounts it. The API server puts
    the node's name in such a token, and the admission policy reads it from there."""
    pod = f"agent-{node}"
    plane.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod, "namespace": AGENT_NS},
                "spec": {
                    "nodeName": node,
                    "serviceAccountName": AGENT_SA,
                    "automountServiceAccountToken": False,
                    "containers": [{"name": "agent", "image": "topology-labeler:test"}],
                },
            }
        ),
    )
    token = plane.kubectl(
        "create",
        "token",
        AGENT_SA,
        "-n",
        AGENT_NS,
        "--bound-object-kind=Pod",
        f"--bound-object-name={pod}",
        "--duration=2h",
    ).stdout.strip()
    return plane.token_kubeconfig(f"agent-{node}", token)


def resource_of(obj: dict[str, Any]) -> str:
    """The kind as kubectl names it without doubt: ``workload`` alone is Kubernetes' own
    Workload (scheduling.k8s.io) on 1.37, not Kueue's, so the group goes with it."""
    group, _, version = obj["apiVersion"].rpartition("/")
    return f"{obj['kind'].lower()}.{version}.{group}" if group else obj["kind"].lower()


def load_snapshot(plane: ControlPlane, path: Path, work: Path) -> list[tuple[str, str, str | None]]:
    """Create every object of a snapshot file (``kubectl get … -o yaml``) in the cluster,
    then set the status of those that carry one through the status subresource, as their
    controllers would (kubelet, Kueue). Returns (kind, name, namespace) of what it made."""
    items = yaml.safe_load(path.read_text())["items"]
    spaces = sorted({i["metadata"]["namespace"] for i in items if i["metadata"].get("namespace")})
    bare = []
    for item in items:
        obj = {k: v for k, v in item.items() if k != "status"}
        obj["metadata"] = {
            k: v for k, v in item["metadata"].items() if k not in ("resourceVersion", "uid")
        }
        bare.append(obj)
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in spaces
    ]
    listing = work / "snapshot-objects.json"
    listing.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": namespaces + bare}))
    plane.kubectl("apply", "--server-side", "-f", str(listing))
    for item in items:
        if item.get("status") and item["kind"] in ("Node", "Pod", "Workload"):
            where = (
                ["-n", item["metadata"]["namespace"]] if item["metadata"].get("namespace") else []
            )
            plane.kubectl(
                "patch",
                resource_of(item),
                item["metadata"]["name"],
                *where,
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps({"status": item["status"]}),
            )
        if item["kind"] == "Node":  # the lifecycle controller's part, as in add_node
            taints = (item.get("spec") or {}).get("taints") or None
            plane.kubectl(
                "patch", "node", item["metadata"]["name"], "--type=merge",
                "-p", json.dumps({"spec": {"taints": taints}}),
            )  # fmt: skip
    return [(resource_of(i), i["metadata"]["name"], i["metadata"].get("namespace")) for i in items]


def delete_loaded(plane: ControlPlane, made: list[tuple[str, str, str | None]]) -> None:
    for resource, name, namespace in made:
        where = ["-n", namespace] if namespace else []
        plane.kubectl(
            "delete", resource, name, *where, "--ignore-not-found", "--wait=false", check=False
        )


def wait_established(plane: ControlPlane, crd: str) -> None:
    """Until the CRD is served (at most a minute). Polled with `get` rather than `kubectl
    wait`, which once failed at once here with the CRD just created; the last answer is
    the message."""
    deadline = time.monotonic() + 60
    condition = "{.status.conditions[?(@.type=='Established')].status}"
    while True:
        done = plane.kubectl("get", "crd", crd, "-o", f"jsonpath={condition}", check=False)
        if done.returncode == 0 and done.stdout.strip() == "True":
            return
        assert time.monotonic() < deadline, f"{crd} not established: {done.stdout}{done.stderr}"
        time.sleep(0.2)
