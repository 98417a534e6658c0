"""Contract: ResourceSlices (resource.k8s.io/v1), through the real client and kubectl.

From pkg/registry/resource/resourceslice (strategy.go, storage/storage.go) and
pkg/apis/resource/validation: cluster-scoped, field selectors spec.nodeName ("" when the
slice names no node) and spec.driver, generation kept, the deleted object returned, the
spec validated. A server without the API answers 404 and leaves it out of discovery.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.draslices import gpu_slice
from tests.fakekube import FakeKube
from tests.helpers import cli_env
from tests.realkube.adapter import Kube


@pytest.fixture
def dra(api: Kube) -> client.ResourceV1Api:
    api.add_object("ResourceSlice", gpu_slice("gpu-1", name="gpu-1-a"))
    api.add_object("ResourceSlice", gpu_slice("gpu-2", name="gpu-2-a"))
    other = gpu_slice("gpu-1", driver="net.example.com", name="gpu-1-net")
    api.add_object("ResourceSlice", other)
    shared = gpu_slice("x", name="shared", driver="net.example.com", devices=[])
    del shared["spec"]["nodeName"]
    shared["spec"]["allNodes"] = True
    api.add_object("ResourceSlice", shared)
    return client.ResourceV1Api(api.api_client())


def names(lst: client.V1ResourceSliceList) -> list[str]:
    return [i.metadata.name for i in lst.items]


def test_field_selectors_of_the_real_server(dra: client.ResourceV1Api) -> None:
    """toSelectableFields: spec.nodeName, spec.driver and, from 1.37, spec.pool.name (and
    metadata.name); any other field is refused naming the kind."""
    assert names(dra.list_resource_slice(field_selector="spec.driver=gpu.nvidia.com")) == [
        "gpu-1-a",
        "gpu-2-a",
    ]
    assert names(dra.list_resource_slice(field_selector="spec.nodeName=gpu-1")) == [
        "gpu-1-a",
        "gpu-1-net",
    ]
    # A slice for all nodes has no nodeName: it matches the empty value.
    assert names(dra.list_resource_slice(field_selector="spec.nodeName=")) == ["shared"]
    both = "spec.driver=gpu.nvidia.com,spec.nodeName=gpu-2"
    assert names(dra.list_resource_slice(field_selector=both)) == ["gpu-2-a"]
    assert names(dra.list_resource_slice(field_selector="spec.pool.name=gpu-2")) == ["gpu-2-a"]
    with pytest.raises(ApiException) as exc:
        dra.list_resource_slice(field_selector="spec.pool.generation=1")
    assert exc.value.status == 400
    assert json.loads(exc.value.body)["message"] == (
        "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool.generation"
    )


def test_cluster_scoped_generation_and_delete(api: Kube, dra: client.ResourceV1Api) -> None:
    one = dra.read_resource_slice("gpu-1-a")
    assert one.metadata.generation == 1 and one.metadata.namespace is None
    api.update_object("ResourceSlice", "gpu-1-a", lambda o: o["spec"]["pool"].update(generation=2))
    assert dra.read_resource_slice("gpu-1-a").metadata.generation == 2  # the spec changed
    gone = dra.delete_resource_slice("gpu-1-a")
    assert gone.metadata.name == "gpu-1-a"  # ReturnDeletedObject
    with pytest.raises(ApiException) as exc:
        dra.read_resource_slice("gpu-1-a")
    assert exc.value.status == 404
    message = json.loads(exc.value.body)["message"]
    assert message == 'resourceslices.resource.k8s.io "gpu-1-a" not found'


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["spec"].pop("driver"), "spec.driver: Required value"),
        (lambda s: s["spec"]["pool"].pop("name"), "spec.pool.name: Required value"),
        (
            lambda s: s["spec"]["pool"].update(resourceSliceCount=0),
            "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        ),
        (
            lambda s: s["spec"].pop("nodeName"),
            "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required",
        ),
        (
            lambda s: s["spec"].update(allNodes=True),
            "but multiple fields are set",
        ),
        (lambda s: s["spec"]["devices"][0].update(name="GPU_0"), "spec.devices[0].name"),
    ],
)
def test_invalid_slices_are_rejected(api: Kube, change, message: str) -> None:
    # Sent as raw JSON: the official client's models refuse most of these before sending.
    body = gpu_slice("gpu-9", name="bad")
    change(body)
    req = urllib.request.Request(
        api.url + "/apis/resource.k8s.io/v1/resourceslices",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as exc:
        api.urlopen(req)
    assert exc.value.code == 422
    status = json.loads(exc.value.read())
    assert status["reason"] == "Invalid" and message in status["message"]


def test_driver_and_node_are_immutable(dra: client.ResourceV1Api) -> None:
    with pytest.raises(ApiException) as exc:
        dra.patch_resource_slice("gpu-2-a", {"spec": {"nodeName": "gpu-3"}})
    assert exc.value.status == 422
    message = json.loads(exc.value.body)["message"]
    assert 'spec.nodeName: Invalid value: "gpu-3": field is immutable' in message
    assert dra.read_resource_slice("gpu-2-a").spec.node_name == "gpu-2"


def test_discovery_and_kubectl(api: Kube, dra: client.ResourceV1Api, tmp_path) -> None:
    apis = client.ApisApi(api.api_client()).get_api_versions()
    assert "resource.k8s.io" in [g.name for g in apis.groups]
    found = client.ApisApi(api.api_client()).api_client.call_api(
        "GET", api.url + "/apis/resource.k8s.io/v1"
    )
    found.read()
    doc = json.loads(found.data)
    res = next(r for r in doc["resources"] if r["name"] == "resourceslices")
    assert (res["name"], res["kind"], res["namespaced"]) == (
        "resourceslices",
        "ResourceSlice",
        False,
    )
    kc = api.write_kubeconfig(tmp_path / "kc")
    p = subprocess.run(
        ["kubectl", "--kubeconfig", str(kc), "get", "resourceslices", "-o", "name"],
        capture_output=True, text=True, env=cli_env(), timeout=60, check=False,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "resourceslice.resource.k8s.io/gpu-1-a" in p.stdout.split()


def test_a_server_without_the_api(fake_kube: FakeKube) -> None:
    """Before Kubernetes 1.34 (or with resource.k8s.io/v1 turned off): not in discovery,
    and 404 NotFound on its paths. Fake only: the session's real server serves the API and
    cannot stop serving it while it runs."""
    fake_kube.unserved.add("resource.k8s.io/v1")
    apis = client.ApisApi(fake_kube.api_client()).get_api_versions()
    assert "resource.k8s.io" not in [g.name for g in apis.groups]
    with pytest.raises(ApiException) as exc:
        client.ResourceV1Api(fake_kube.api_client()).list_resource_slice()
    assert exc.value.status == 404
    assert json.loads(exc.value.body)["reason"] == "NotFound"
