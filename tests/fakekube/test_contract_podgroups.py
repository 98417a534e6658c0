"""Contract: kube-scheduler's Workload API objects, built in to the API server (Kubernetes
1.37): PodGroups in scheduling.k8s.io/v1beta1, CompositePodGroups in v1alpha3, beside
PriorityClasses in v1 (the group's preferred version). Namespaced, typed: a LIST's items
carry no kind/apiVersion, as for every built-in resource."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from kubernetes import client

from tests.fakekube import FakeKube

PODGROUP = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "pg1", "namespace": "default"},
    "spec": {
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "schedulingConstraints": {"topology": [{"key": "rack"}]},
    },
}


def test_discovery_lists_podgroups_and_compositepodgroups(fake_kube: FakeKube) -> None:
    api = client.ApisApi(fake_kube.api_client())
    groups = {g.name: g for g in api.get_api_versions().groups}
    sched = groups["scheduling.k8s.io"]
    assert sched.preferred_version.version == "v1"
    assert [v.version for v in sched.versions] == ["v1", "v1beta1", "v1alpha3"]
    beta = client.SchedulingV1beta1Api(fake_kube.api_client()).get_api_resources()
    alpha = client.SchedulingV1alpha3Api(fake_kube.api_client()).get_api_resources()
    assert [(r.name, r.kind, r.namespaced) for r in beta.resources] == [
        ("podgroups", "PodGroup", True)
    ]
    assert [(r.name, r.kind, r.namespaced) for r in alpha.resources] == [
        ("compositepodgroups", "CompositePodGroup", True)
    ]


def test_podgroup_create_get_list_with_the_typed_client(fake_kube: FakeKube) -> None:
    api = client.SchedulingV1beta1Api(fake_kube.api_client())
    created = api.create_namespaced_pod_group("default", PODGROUP)
    assert created.metadata.uid and created.spec.scheduling_policy.gang.min_count == 2
    got = api.read_namespaced_pod_group("pg1", "default")
    assert got.spec.scheduling_constraints.topology[0].key == "rack"
    status, body = _get(fake_kube, "/apis/scheduling.k8s.io/v1beta1/podgroups")
    raw = json.loads(body)
    assert status == 200 and raw["kind"] == "PodGroupList"
    assert "kind" not in raw["items"][0]  # typed list


def test_compositepodgroup_is_served_in_v1alpha3_only(fake_kube: FakeKube) -> None:
    cpg = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "root", "namespace": "default"},
        "spec": {
            "workloadRef": {"workloadName": "w", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        },
    }
    fake_kube.add_object("CompositePodGroup", cpg)
    api = client.SchedulingV1alpha3Api(fake_kube.api_client())
    items = api.list_composite_pod_group_for_all_namespaces().items
    assert [i.metadata.name for i in items] == ["root"]
    status, _ = _get(fake_kube, "/apis/scheduling.k8s.io/v1beta1/compositepodgroups")
    assert status == 404


def _get(fake: FakeKube, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(fake.url + path) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
