"""The audit exporter and DRA: ResourceSlices watched like nodes (no LIST per scrape), a
node whose GPUs only slices publish counted as soon as its slice appears, nothing published
before the slices were listed once, and no change where the API is not served."""

from __future__ import annotations

import time

from labeler.audit.options import ExporterOptions
from labeler.audit.serve import AuditExporter
from labeler.core.scope import Scope
from tests.audit.exporters import running
from tests.audit.test_audit_fake import PROFILE, full, nodes_metric, scrape, series
from tests.draslices import NVIDIA, gpu_slice
from tests.fakekube import FakeKube
from tests.helpers import wait_for

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
DRA_UNUSABLE = series(
    "topology_labeler_unlabeled_accelerators", profile="oci-rdma", resource=NVIDIA
)


def test_slices_put_nodes_in_scope_through_the_watch(
    fake_kube: FakeKube, exporter: tuple[AuditExporter, str]
) -> None:
    exp, url = exporter
    fake_kube.add_node("gb-1", labels=full("i", "n", "l"))
    fake_kube.add_node("gb-2")  # no topology labels
    wait_for(lambda: exp.readyz()[0], what="ready")
    assert scrape(url).get(nodes_metric("labeled"), 0) == 0  # no GPU seen yet: no scope
    lists = fake_kube.count("list")

    started = time.monotonic()
    fake_kube.add_object("ResourceSlice", gpu_slice("gb-1", 4, mig=2))
    fake_kube.add_object("ResourceSlice", gpu_slice("gb-2", 4))
    m = wait_for(
        lambda: (s := scrape(url)).get(nodes_metric("unlabeled")) == 1 and s,
        what="the DRA nodes in the metrics",
    )
    assert time.monotonic() - started < 2.0
    assert m[nodes_metric("labeled")] == 1
    assert m[DRA_UNUSABLE] == 4  # gb-2's four GPUs, its MIG devices not counted twice
    # The driver withdraws gb-2's slice (the GPUs went away): out of scope again.
    fake_kube.delete_object("ResourceSlice", "gb-2-gpu.nvidia.com-x7k2p")
    wait_for(lambda: scrape(url).get(nodes_metric("unlabeled")) == 0, what="gb-2 out of scope")
    assert fake_kube.count("list") == lists  # watches only: no LIST per scrape or event
    assert fake_kube.count("watch", SLICES) >= 1
    watch = fake_kube.requests(verb="watch", path_prefix=SLICES)[-1]
    assert watch.query["fieldSelector"] == f"spec.driver={NVIDIA}"


def test_nothing_is_published_before_the_slices_are_listed(fake_kube: FakeKube) -> None:
    fake_kube.add_node("gb-1", labels=full("i", "n", "l"))
    fake_kube.add_object("ResourceSlice", gpu_slice("gb-1", 4))
    fake_kube.faults.add(method="GET", path=SLICES, status=503, times=2)
    exp = AuditExporter(
        fake_kube.cluster(),
        PROFILE,
        Scope(),
        options=ExporterOptions(first_backoff=0.2, max_backoff=0.2),
    )
    with running(fake_kube, exp, serve=False):
        wait_for(lambda: exp._last_sync is not None, what="the node list")
        ok, why = exp.readyz()
        assert not ok and ("resourceslices" in why or "ResourceSlices" in why)
        assert exp.figures() is None  # gb-1 would be missing: publish nothing yet
        wait_for(lambda: exp.readyz()[0], 10, what="ready after the retries")
        report = exp.report
        assert report is not None and report.states["labeled"] == ("gb-1",)


def test_where_the_api_is_not_served_the_exporter_works_as_before(fake_kube: FakeKube) -> None:
    fake_kube.unserved.add("resource.k8s.io/v1")
    fake_kube.add_node("gpu-1", labels=full("i", "n", "l"), allocatable={"nvidia.com/gpu": "8"})
    exp = AuditExporter(fake_kube.cluster(), PROFILE, Scope())
    with running(fake_kube, exp, serve=False):
        wait_for(lambda: exp.readyz()[0], what="ready")
        report = exp.report
        assert report is not None and report.states["labeled"] == ("gpu-1",)
        asked = fake_kube.requests(path_prefix=SLICES)
        assert [r.status for r in asked] == [404]  # asked once; again only much later
        assert exp.healthz()[0]


def test_slices_listed_first_publish_nothing_until_the_nodes_are(fake_kube: FakeKube) -> None:
    fake_kube.add_node("gb-1", labels=full("i", "n", "l"))
    fake_kube.add_object("ResourceSlice", gpu_slice("gb-1", 4))
    fake_kube.faults.add(method="GET", path="/api/v1/nodes", delay=1.0)  # a slow first LIST
    exp = AuditExporter(fake_kube.cluster(), PROFILE, Scope())
    with running(fake_kube, exp, serve=False):
        wait_for(lambda: all(w.synced for w in exp._slice_watches), what="the slices listed")
        time.sleep(0.3)  # past the debounce: a recomputation of no nodes has run
        assert exp.report is None and not exp.readyz()[0]
        wait_for(lambda: exp.readyz()[0], 10, what="ready once the nodes are listed")
        report = exp.report
        assert report is not None and report.states["labeled"] == ("gb-1",)
