"""Contract: kube-scheduler's Workload API objects, built in to the API server (Kubernetes
1.37): PodGroups in scheduling.k8s.io/v1beta1, CompositePodGroups in v1alpha3, beside
PriorityClasses in v1 (the group's preferred version). Namespaced, typed: a LIST's items
carry no kind/apiVersion, as for every built-in resource."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from kubernetes import client

from tests.realkube.adapter import Kube

PODGROUP = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "pg1", "namespace": "default"},
    "spec": {
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "schedulingConstraints": {"topology": [{"key": "rack"}]},
    },
}


def test_discovery_lists_podgroups_and_compositepodgroups(api: Kube) -> None:
    apis = client.ApisApi(api.api_client())
    groups = {g.name: g for g in apis.get_api_versions().groups}
    sched = groups["scheduling.k8s.io"]
    assert sched.preferred_version.version == "v1"
    assert [v.version for v in sched.versions] == ["v1", "v1beta1", "v1alpha3"]
    beta = client.SchedulingV1beta1Api(api.api_client()).get_api_resources()
    alpha = client.SchedulingV1alpha3Api(api.api_client()).get_api_resources()
    top = [(r.name, r.kind, r.namespaced) for r in beta.resources if "/" not in r.name]
    assert ("podgroups", "PodGroup", True) in top
    top = [(r.name, r.kind, r.namespaced) for r in alpha.resources if "/" not in r.name]
    assert ("compositepodgroups", "CompositePodGroup", True) in top


def test_podgroup_create_get_list_with_the_typed_client(api: Kube) -> None:
    sched = client.SchedulingV1beta1Api(api.api_client())
    created = sched.create_namespaced_pod_group("default", PODGROUP)
    assert created.metadata.uid and created.spec.scheduling_policy.gang.min_count == 2
    got = sched.read_namespaced_pod_group("pg1", "default")
    assert got.spec.scheduling_constraints.topology[0].key == "rack"
    status, body = _get(api, "/apis/scheduling.k8s.io/v1beta1/podgroups")
    raw = json.loads(body)
    assert status == 200 and raw["kind"] == "PodGroupList"
    assert "kind" not in raw["items"][0]  # typed list


def test_compositepodgroup_is_served_in_v1alpha3_only(api: Kube) -> None:
    cpg = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "root", "namespace": "default"},
        "spec": {
            "workloadRef": {"workloadName": "w", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        },
    }
    api.add_object("CompositePodGroup", cpg)
    alpha = client.SchedulingV1alpha3Api(api.api_client())
    items = alpha.list_composite_pod_group_for_all_namespaces().items
    assert [i.metadata.name for i in items] == ["root"]
    status, _ = _get(api, "/apis/scheduling.k8s.io/v1beta1/compositepodgroups")
    assert status == 404


def _get(api: Kube, path: str) -> tuple[int, bytes]:
    try:
        with api.urlopen(api.url + path) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
