"""The kube-scheduler oracle: the real kube-scheduler (with etcd, kube-apiserver and KWOK,
``tests/realkube/controlplane.py``) deciding a scenario's pods.

For a scenario folder (``snapshot.yaml`` and ``podgroups.yaml``, the files ``advise``
reads) it creates, in this order: the namespace; the nodes, with their labels, taints,
``spec.unschedulable`` and, through the status subresource, the allocatable and the Ready
condition (Ready nodes are handed to KWOK); the pods already running (bound with
``spec.nodeName``); the pending pods, each with a scheduling gate of the oracle's
(``HOLD``); the groups, PodGroups first and the root of the hierarchy at the very end; and
once every pod waits in its root's gated entry of kube-scheduler's queue, the pods without
the gate. So the whole hierarchy reaches a scheduling cycle at once, as ``advise`` sees it.

It then waits until every pending pod is decided: bound (``spec.nodeName``), or marked
``PodScheduled=False`` with the scheduler's message, and no pod changed for ``SETTLE``
seconds (the messages of a second cycle come after the first's). A gang short of its minCount never
reaches a scheduling cycle and kube-scheduler writes nothing: a pod still undecided after
``QUIET`` seconds without any change is reported as ``queued`` (no message). The answer is
JSON (``tests/oracles/README.md`` documents it); then every object the scenario made is
deleted (the namespace stays: without kube-controller-manager it would stay Terminating).

``python -m tests.oracles.kubesched.oracle FOLDER`` starts a control plane of its own, runs
the one scenario and prints the answer: what a batch's ``repro.sh`` and each regression
folder's README call.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes
import urllib3
import yaml

from tests.realkube.controlplane import KWOK_ANNOTATION, ControlPlane, metric_sum

Obj = dict[str, Any]
KUBERNETES = "v1.37.2"
"""The release the oracle runs; ``scripts/control-plane.sh`` builds it (a test checks)."""
QUIET = 5.0
SETTLE = 0.3
"""A hierarchy that fits with pods left over is tried again at once (the queue puts it back
without backoff); the pods' messages from that cycle come a few milliseconds after those of
the first, which already mark every pod decided."""
BACKOFF = 300
POLL = 0.05
MERGE = "application/merge-patch+json"
PLURALS = {
    "PodGroup": "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups",
    "CompositePodGroup": "/apis/scheduling.k8s.io/v1alpha3/namespaces/{ns}/compositepodgroups",
    "Pod": "/api/v1/namespaces/{ns}/pods",
}


class OracleError(RuntimeError):
    pass


class Api:
    """JSON requests as the admin, over the official client's configuration and pool, and
    kube-scheduler's own count of the pods in its queue."""

    def __init__(self, plane: ControlPlane) -> None:
        client = kubernetes.config.new_client_from_config(config_file=str(plane.kubeconfig))
        self._pool = client.rest_client.pool_manager
        self._server = client.configuration.host
        # /metrics is open to anyone (OraclePlane); the certificate is checked.
        self._metrics = urllib3.PoolManager(ca_certs=str(plane.ca.cert))
        self._metrics_url = f"https://127.0.0.1:{plane.scheduler_port}/metrics"

    def queued_pods(self, *labels: str) -> int:
        """Pods in kube-scheduler's queue (``scheduler_pending_pods``), in every part of it
        (active, backoff, unschedulable, gated, incomplete, ...) or those ``labels`` name."""
        text = self._metrics.request("GET", self._metrics_url).data.decode()
        return int(metric_sum(text, "scheduler_pending_pods", *labels))

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        content: str = "application/json",
        ok: tuple[int, ...] = (),
    ) -> Any:
        """The decoded answer; a status >= 400 not in ``ok`` raises."""
        data = None if body is None else json.dumps(body).encode()
        head = {"Accept": "application/json", "Content-Type": content}
        answer = self._pool.request(method, self._server + path, body=data, headers=head)
        if answer.status >= 400 and answer.status not in ok:
            raise OracleError(f"{method} {path}: {answer.status} {answer.data.decode()[:400]}")
        return json.loads(answer.data) if answer.data else None


def _items(path: Path) -> list[Obj]:
    doc = yaml.safe_load(path.read_text())
    return [o for o in doc.get("items") or [] if isinstance(o, dict)]


def _list(api: Api, path: str) -> list[Obj]:
    items: list[Obj] = api("GET", path)["items"]
    return items


def _create_node(api: Api, node: Obj) -> None:
    """The node with its status as a kubelet reports it. KWOK manages the Ready ones; it
    finds them Ready with their allocatable and leaves both alone (a node made without a
    status would get KWOK's default allocatable)."""
    meta = node["metadata"]
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    notes = {KWOK_ANNOTATION: "fake"} if ready else {}
    body = {
        "metadata": {"name": meta["name"], "labels": meta["labels"], "annotations": notes},
        "spec": {"unschedulable": spec.get("unschedulable")},
        "status": status,
    }
    api("POST", "/api/v1/nodes", body)
    # The API server's admission gives every new node the not-ready taint; the node's own
    # list (as the lifecycle controller leaves it) replaces it.
    api("PATCH", f"/api/v1/nodes/{meta['name']}", {"spec": {"taints": spec.get("taints")}}, MERGE)


HOLD = "oracle.topology-labeler.example/hold"
"""The scheduling gate every pending pod is created with and released from once its whole
hierarchy waits in kube-scheduler's queue. When a group's root appears, the queue moves
the pods that waited for it into the root's entry one at a time (``AddPodGroup``,
``AddCompositePodGroup``), and the scheduling loop pops the entry as soon as its first
pod is in: the cycle then runs with a part of the pods (``Pod added to pending pod group
pods, waiting for its root group to be requeued``) and its answer is not the one for the
hierarchy. A gated pod gates its whole entry (``runPreEnqueuePlugins``: "if any pod is
gated, the whole entity is gated"), so the entry leaves the gated pool only when the last
pod's gate is gone, with every pod in it."""
GATED = 'queue="gated"'


def _create(api: Api, obj: Obj, *, held: bool = False) -> None:
    meta = obj["metadata"]
    body = {k: v for k, v in obj.items() if k != "status"}
    body["metadata"] = {"name": meta["name"], "namespace": meta["namespace"]}
    if held:
        spec = body["spec"] = dict(body["spec"])
        spec["schedulingGates"] = [*(spec.get("schedulingGates") or []), {"name": HOLD}]
    api("POST", PLURALS[obj["kind"]].format(ns=meta["namespace"]), body)


def _release(api: Api, obj: Obj) -> None:
    """The pod without the oracle's gate (a scenario's own gates stay)."""
    meta = obj["metadata"]
    gates = [g for g in obj["spec"].get("schedulingGates") or [] if g.get("name") != HOLD]
    path = PLURALS["Pod"].format(ns=meta["namespace"]) + f"/{meta['name']}"
    api("PATCH", path, {"spec": {"schedulingGates": gates or None}}, MERGE)


def _grouped(pending: list[Obj], groups: list[Obj]) -> int:
    """The pending pods whose PodGroup and every CompositePodGroup above it are in the
    scenario: those kube-scheduler puts in their root's entry (the others wait for a group
    to appear)."""
    parent = {
        (g["kind"], g["metadata"]["name"]): g["spec"].get("parentCompositePodGroupName")
        for g in groups
    }

    def complete(kind: str, name: str) -> bool:
        for _ in range(len(parent) + 1):
            if (kind, name) not in parent:
                return False
            up = parent[(kind, name)]
            if up is None:
                return True
            kind, name = "CompositePodGroup", up
        return False

    return sum(
        complete("PodGroup", (p["spec"].get("schedulingGroup") or {}).get("podGroupName", ""))
        for p in pending
    )


GATED_REASON = "SchedulingGated"
"""The API server's ``PodScheduled=False`` reason for a pod created with gates; it stays
after the gates are gone until kube-scheduler writes its own."""


def _decided(pod: Obj) -> bool:
    if pod["spec"].get("nodeName"):
        return True
    conditions = pod.get("status", {}).get("conditions") or []
    return any(
        c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") != GATED_REASON
        for c in conditions
    )


def _answer_pod(pod: Obj) -> Obj:
    node = pod["spec"].get("nodeName")
    scheduled: Obj = next(
        (c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == "PodScheduled"),
        {},
    )
    if node:
        state, reason, message = "bound", "", ""
    elif scheduled.get("status") == "False" and scheduled.get("reason") != GATED_REASON:
        state, reason, message = "unschedulable", scheduled.get("reason", ""), scheduled["message"]
    else:
        state, reason, message = "queued", "", ""
    meta = pod["metadata"]
    return {
        "name": f"{meta['namespace']}/{meta['name']}",
        "state": state,
        "node": node,
        "reason": reason,
        "message": message,
    }


def _answer_group(obj: Obj) -> Obj:
    conditions = (obj.get("status") or {}).get("conditions") or []
    cond = next((c for c in conditions if c["type"] == "PodGroupInitiallyScheduled"), None)
    return {
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "condition": None
        if cond is None
        else {k: cond.get(k, "") for k in ("status", "reason", "message")},
    }


def _wait(api: Api, namespace: str, pending: set[str], quiet: float) -> list[Obj]:
    """The namespace's pods once every pending one is decided and none changed for
    ``SETTLE`` seconds, or nothing changed for ``quiet`` seconds."""
    last, changed = None, time.monotonic()
    while True:
        pods = _list(api, f"/api/v1/namespaces/{namespace}/pods")
        mine = [p for p in pods if p["metadata"]["name"] in pending]
        now = [(p["metadata"]["name"], p["metadata"]["resourceVersion"]) for p in mine]
        if now != last:
            last, changed = now, time.monotonic()
        elif time.monotonic() - changed > (SETTLE if all(map(_decided, mine)) else quiet):
            return pods
        time.sleep(POLL)


def run(api: Api, folder: Path, quiet: float = QUIET) -> Obj:
    """One scenario through the real scheduler; its objects are deleted afterwards."""
    known = _items(folder / "snapshot.yaml")
    asked = _items(folder / "podgroups.yaml")
    nodes = [o for o in known if o.get("kind") == "Node"]
    running = [o for o in known if o.get("kind") == "Pod"]
    pending = [o for o in asked if o.get("kind") == "Pod"]
    groups = [o for o in asked if o.get("kind") in ("PodGroup", "CompositePodGroup")]
    namespaces = sorted({o["metadata"]["namespace"] for o in [*running, *pending, *groups]})
    for ns in namespaces:
        api("POST", "/api/v1/namespaces", {"metadata": {"name": ns}}, ok=(409,))
    host = _sentinel_host(nodes, running)
    nodes = [n for n in nodes if n is not host] + [host]
    try:
        for node in nodes:
            _create_node(api, node)
        for obj in running:
            _create(api, obj)
        _sync(api, namespaces[0], host["metadata"]["name"])
        for obj in pending:
            _create(api, obj, held=True)
        _until_queued(api, len(pending))
        for obj in _in_order(groups):
            _create(api, obj)
        _until_queued(api, _grouped(pending, groups), GATED)
        for obj in pending:
            _release(api, obj)
        started = time.monotonic()
        names = {p["metadata"]["name"] for p in pending}
        pods = _wait(api, pending[0]["metadata"]["namespace"], names, quiet)
        took = time.monotonic() - started
        by_name = {p["metadata"]["name"]: p for p in pods}
        answer = {
            "kubernetes": KUBERNETES,
            "pods": [_answer_pod(by_name[p["metadata"]["name"]]) for p in pending],
            "groups": [_read_group(api, g) for g in groups],
            "seconds": round(took, 3),
        }
    finally:
        _clean(api, namespaces, [n["metadata"]["name"] for n in nodes])
    return answer


SENTINEL = "oracle-sentinel"


def _sentinel_host(nodes: list[Obj], running: list[Obj]) -> Obj:
    """A node with a free pod slot (the one created last)."""
    on: dict[str, int] = {}
    for pod in running:
        on[pod["spec"]["nodeName"]] = on.get(pod["spec"]["nodeName"], 0) + 1
    for node in reversed(nodes):
        slots = int(node["status"]["allocatable"].get("pods", "110"))
        if slots > on.get(node["metadata"]["name"], 0):
            return node
    raise OracleError("no node of the scenario has a free pod slot for the sentinel pod")


def _sync(api: Api, namespace: str, host: str) -> None:
    """Until kube-scheduler has seen every node and running pod: a pod that only the node
    created last can take is bound there (the scheduler's informers deliver in order, so it
    knows the earlier ones too), then deleted before the pending pods are created (which the
    same informer delivers after the deletion)."""
    spec = {
        "containers": [{"name": "c", "image": "registry.k8s.io/pause"}],
        "nodeSelector": {"kubernetes.io/hostname": host},
        "tolerations": [{"operator": "Exists"}],
    }
    path = PLURALS["Pod"].format(ns=namespace)
    api("POST", path, {"metadata": {"name": SENTINEL}, "spec": spec})
    deadline = time.monotonic() + 30
    while not api("GET", f"{path}/{SENTINEL}")["spec"].get("nodeName"):
        if time.monotonic() > deadline:
            raise OracleError(f"kube-scheduler did not bind the sentinel pod to {host} in 30 s")
        time.sleep(POLL / 2)
    api("DELETE", f"{path}/{SENTINEL}?gracePeriodSeconds=0")


def _until_queued(api: Api, count: int, *where: str) -> None:
    """Until kube-scheduler holds ``count`` pending pods in its queue (in the part ``where``
    names, if any). First every pending pod, each waiting for its group, so that no group
    reaches it before one of its pods (the pods and the groups come through informers of
    their own, in no order between them); then, once the groups are made, every pod of a
    complete hierarchy in its root's gated entry (``HOLD``)."""
    deadline = time.monotonic() + 30
    while api.queued_pods(*where) < count:
        if time.monotonic() > deadline:
            raise OracleError(
                f"kube-scheduler did not queue the {count} pending pods {' '.join(where)} in 30 s"
            )
        time.sleep(POLL / 2)


def _in_order(groups: list[Obj]) -> list[Obj]:
    """PodGroups first, then CompositePodGroups from the leaves up: each parent after
    every child, so the root comes last."""
    parent = {
        g["metadata"]["name"]: g["spec"].get("parentCompositePodGroupName")
        for g in groups
        if g["kind"] == "CompositePodGroup"
    }

    def depth(g: Obj) -> int:
        d, up = 0, g["metadata"]["name"] if g["kind"] == "CompositePodGroup" else None
        while up is not None and d < len(parent) + 1:
            up, d = parent.get(up), d + 1
        return d

    cpgs = sorted((g for g in groups if g["kind"] == "CompositePodGroup"), key=lambda g: -depth(g))
    return [g for g in groups if g["kind"] == "PodGroup"] + cpgs


def _read_group(api: Api, g: Obj) -> Obj:
    meta = g["metadata"]
    path = PLURALS[g["kind"]].format(ns=meta["namespace"]) + f"/{meta['name']}"
    return _answer_group(api("GET", path))


def _clean(api: Api, namespaces: list[str], nodes: list[str]) -> None:
    """Pods go at once; groups carry kube-controller-manager's protection finalizer, which
    no controller here removes, so it is dropped first."""
    for ns in namespaces:
        api("DELETE", PLURALS["Pod"].format(ns=ns) + "?gracePeriodSeconds=0", ok=(404,))
        for kind in ("PodGroup", "CompositePodGroup"):
            plural = PLURALS[kind].format(ns=ns)
            for obj in _list(api, plural):
                path = f"{plural}/{obj['metadata']['name']}"
                api("PATCH", path, {"metadata": {"finalizers": None}}, MERGE, ok=(404,))
                api("DELETE", path, ok=(404,))
    for name in nodes:
        api("DELETE", f"/api/v1/nodes/{name}", ok=(404,))


OPEN_PATHS = "/healthz,/readyz,/livez,/metrics"


class OraclePlane(ControlPlane):
    """The control plane with kube-scheduler's retry held back: a pod or group that was
    found unschedulable waits ``BACKOFF`` seconds before its next try (the default is 1 s,
    doubling), so that what the oracle reads is the scheduler's first decision, the one
    ``advise`` simulates, and not a later one made after the first pods were bound."""

    def command(self, name: str) -> list[str]:
        args = super().command(name)
        if name != "kube-scheduler":
            return args
        config = self.folder / "scheduler-config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"kubeconfig": str(self.kubeconfig)},
                    "leaderElection": {"leaderElect": False},
                    "podInitialBackoffSeconds": BACKOFF,
                    "podMaxBackoffSeconds": BACKOFF,
                }
            )
        )
        kept = [a for a in args if not a.startswith(("--kubeconfig=", "--leader-elect="))]
        # /metrics without credentials: the oracle reads the scheduler's queue length there.
        return [*kept, f"--config={config}", f"--authorization-always-allow-paths={OPEN_PATHS}"]


def with_plane(bin_dir: Path, work: Callable[[ControlPlane], Any]) -> Any:
    """``work(plane)`` on a control plane started for it in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="kubesched-oracle-") as tmp:
        plane = OraclePlane(Path(tmp) / "plane", bin_dir)
        try:
            plane.start()
            return work(plane)
        finally:
            plane.stop()


def main(argv: list[str] | None = None) -> int:
    from tests.oracles.kubesched.build import control_plane_bin

    p = argparse.ArgumentParser(prog="python -m tests.oracles.kubesched.oracle")
    p.add_argument("folder", type=Path, help="a scenario: snapshot.yaml and podgroups.yaml")
    args = p.parse_args(argv)
    answer = with_plane(control_plane_bin(), lambda plane: run(Api(plane), args.folder))
    print(json.dumps(answer, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
