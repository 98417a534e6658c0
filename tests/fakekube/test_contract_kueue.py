"""Contract: Kueue's namespaced custom objects (Workloads, LocalQueues) and ClusterQueues,
as the real client reads them, and a watch of Workloads across namespaces."""

from __future__ import annotations

import json
import threading

from kubernetes import client, watch

from tests.realkube.adapter import Kube

KUEUE = ("kueue.x-k8s.io", "v1beta2")
# Kueue's CRD wants at least one PodSet, with a pod template.
POD_SET = {
    "name": "main",
    "count": 1,
    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
}


def queue(name: str, ns: str, cq: str) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


def test_localqueues_are_namespaced_and_clusterqueues_are_not(api: Kube) -> None:
    """CRDs localqueues.kueue.x-k8s.io (scope Namespaced, short names queue/queues/lq) and
    clusterqueues.kueue.x-k8s.io (scope Cluster, short name cq): a LocalQueue lives under
    /namespaces/<ns>/, is listed per namespace and across all; a ClusterQueue is not."""
    co = client.CustomObjectsApi(api.api_client())
    api.add_object("Namespace", {"metadata": {"name": "team-a"}})
    co.create_namespaced_custom_object(
        *KUEUE, "team-a", "localqueues", queue("gpu", "team-a", "gpu")
    )
    co.create_namespaced_custom_object(
        *KUEUE, "default", "localqueues", queue("gpu", "default", "x")
    )
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "gpu"},
    }
    co.create_cluster_custom_object(*KUEUE, "clusterqueues", cq)
    in_ns = co.list_namespaced_custom_object(*KUEUE, "team-a", "localqueues")
    assert [q["spec"]["clusterQueue"] for q in in_ns["items"]] == ["gpu"]
    everywhere = co.list_cluster_custom_object(*KUEUE, "localqueues")
    assert everywhere["kind"] == "LocalQueueList" and len(everywhere["items"]) == 2
    assert co.get_cluster_custom_object(*KUEUE, "clusterqueues", "gpu")["kind"] == "ClusterQueue"
    with api.urlopen(f"{api.url}/apis/kueue.x-k8s.io/v1beta2") as resp:
        resources = json.load(resp)["resources"]
    by_name = {r["name"]: r for r in resources}
    assert by_name["localqueues"]["namespaced"] and not by_name["clusterqueues"]["namespaced"]
    assert by_name["localqueues"]["shortNames"] == ["queue", "queues", "lq"]


def test_a_watch_of_workloads_in_all_namespaces_sees_status_changes(api: Kube) -> None:
    """WATCH /apis/kueue.x-k8s.io/v1beta2/workloads from a LIST's resourceVersion: every
    write after it arrives once, in order (ADDED, then MODIFIED for a status change)."""
    co = client.CustomObjectsApi(api.api_client())
    rv = co.list_cluster_custom_object(*KUEUE, "workloads")["metadata"]["resourceVersion"]
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def follow() -> None:
        w = watch.Watch()
        for event in w.stream(
            co.list_cluster_custom_object, *KUEUE, "workloads", resource_version=rv,
            timeout_seconds=5,
        ):  # fmt: skip
            obj = event["object"]
            seen.append(
                (
                    event["type"],
                    (obj.get("status") or {}).get("admission", {}).get("clusterQueue", ""),
                )
            )
            if len(seen) == 2:
                w.stop()
        done.set()

    t = threading.Thread(target=follow)
    t.start()
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"queueName": "gpu", "podSets": [POD_SET]},
    }
    api.add_object("Workload", wl, namespace="default")

    def admit(obj: dict) -> None:
        obj["status"] = {
            "admission": {"clusterQueue": "gpu", "podSetAssignments": [{"name": "main"}]}
        }

    api.update_object("Workload", "w", admit, namespace="default")
    assert done.wait(10)
    t.join()
    assert seen == [("ADDED", ""), ("MODIFIED", "gpu")]
