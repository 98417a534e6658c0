"""Contract: Volcano's Queues (cluster-scoped), PodGroups and Jobs (namespaced) as the API
server serves their CRDs, through the real client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import NotFoundException

from tests.realkube.adapter import Kube
from tests.sim.volcano.objects import podgroup

SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
BATCH = ("batch.volcano.sh", "v1alpha1")


@pytest.fixture
def co(api: Kube) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api.api_client())


def test_queue_is_cluster_scoped(api: Kube, co) -> None:
    """A Queue is created and listed without a namespace; items keep kind and apiVersion
    (unstructured); a namespaced path for it is 404, as for any cluster-scoped CRD."""
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
         "metadata": {"name": "q1"}, "spec": {"weight": 1}}  # fmt: skip
    co.create_cluster_custom_object(*SCHEDULING, "queues", q)
    lst = co.list_cluster_custom_object(*SCHEDULING, "queues")
    assert lst["kind"] == "QueueList"
    assert [(i["kind"], i["apiVersion"]) for i in lst["items"]] == [
        ("Queue", "scheduling.volcano.sh/v1beta1")
    ]
    with pytest.raises(NotFoundException):
        co.list_namespaced_custom_object(*SCHEDULING, "default", "queues")


def test_podgroups_list_all_namespaces_or_one(api: Kube, co) -> None:
    """PodGroups are namespaced: listed across namespaces at the group path, per namespace
    under namespaces/{ns}, read by name; a missing one is 404 naming the group and kind."""
    api.add_object("Namespace", {"metadata": {"name": "ml"}})
    api.add_object(
        "podgroups.scheduling.volcano.sh", podgroup(2, name="a", ns="default", phase=None)
    )
    api.add_object("podgroups.scheduling.volcano.sh", podgroup(2, name="b", ns="ml", phase=None))
    every = co.list_cluster_custom_object(*SCHEDULING, "podgroups")
    assert sorted(i["metadata"]["name"] for i in every["items"]) == ["a", "b"]
    ml = co.list_namespaced_custom_object(*SCHEDULING, "ml", "podgroups")
    assert [i["metadata"]["name"] for i in ml["items"]] == ["b"]
    got = co.get_namespaced_custom_object(*SCHEDULING, "ml", "podgroups", "b")
    assert got["spec"]["minMember"] == 2 and got["kind"] == "PodGroup"
    with pytest.raises(NotFoundException) as exc:
        co.get_namespaced_custom_object(*SCHEDULING, "ml", "podgroups", "zz")
    details = json.loads(exc.value.body)["details"]
    assert (details["group"], details["kind"], details["name"]) == (
        "scheduling.volcano.sh",
        "podgroups",
        "zz",
    )


def test_volcano_job_is_namespaced_custom_object(api: Kube, co) -> None:
    """batch.volcano.sh Jobs: created in a namespace, generation 1, listed by label."""
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "llm", "labels": {"team": "a"}},
           "spec": {"minAvailable": 1, "tasks": [{"name": "w", "replicas": 1}]}}  # fmt: skip
    out = co.create_namespaced_custom_object(*BATCH, "default", "jobs", job)
    assert out["metadata"]["generation"] == 1 and out["metadata"]["namespace"] == "default"
    lst = co.list_namespaced_custom_object(*BATCH, "default", "jobs", label_selector="team=a")
    assert [i["metadata"]["name"] for i in lst["items"]] == ["llm"]


def test_discovery_lists_volcano_groups(api: Kube) -> None:
    """/apis names scheduling.volcano.sh and batch.volcano.sh with their short names."""
    groups = client.ApisApi(api.api_client()).get_api_versions()
    assert {"scheduling.volcano.sh", "batch.volcano.sh"} <= {g.name for g in groups.groups}
    res = client.CustomObjectsApi(api.api_client()).get_api_resources(*SCHEDULING)
    short = {r.name: r.short_names for r in res.resources if "/" not in r.name}
    assert short == {"queues": ["q", "queue-v1beta1"], "podgroups": ["pg", "podgroup-v1beta1"]}
