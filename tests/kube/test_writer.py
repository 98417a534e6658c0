"""The label writer against the fake API server, driven through the real client. Its
pauses between retries go to a fake clock: they return at once and are recorded."""

import json
import threading

import pytest

from labeler.core.node import OWNED_ANNOTATION, OWNERS_ANNOTATION, SOURCE_IDS_ANNOTATION, NodeLabels
from labeler.core.plan import Desired
from labeler.kube.client import Api, ClusterOptions, connect
from labeler.kube.errors import Expired, Forbidden, Invalid
from labeler.kube.nodes import LabelWriter, get_node, list_node_labels, list_nodes, watch_nodes
from tests.clock import FakeClock
from tests.fakekube import FakeKube

ISLAND, BLOCK, RACK = "x.io/island", "x.io/block", "x.io/rack"
SCOPE = frozenset({ISLAND, BLOCK, RACK})


def writer_of(api: Api, clock: FakeClock | None = None) -> LabelWriter:
    return LabelWriter(api, clock=clock or FakeClock())


def labels(fake: FakeKube, name: str = "n1") -> dict[str, str]:
    return dict(fake.get_node(name)["metadata"]["labels"])


def test_sets_only_changed_keys_and_records_ownership(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1", labels={ISLAND: "i1"})
    writer = writer_of(fake_kube.cluster())
    result = writer.reconcile(
        "n1", Desired(set={ISLAND: "i1", BLOCK: "b1"}, prune=SCOPE, source_ids={BLOCK: "ocid.b1"})
    )
    assert result.written
    (patch,) = fake_kube.requests(method="PATCH")
    assert patch.content_type == "application/merge-patch+json"
    assert patch.body["metadata"]["labels"] == {BLOCK: "b1"}
    assert patch.body["metadata"]["resourceVersion"]
    node = fake_kube.get_node("n1")
    assert node["metadata"]["labels"][BLOCK] == "b1"
    # ISLAND already had the wanted value: left alone and not claimed.
    assert node["metadata"]["annotations"][OWNED_ANNOTATION] == BLOCK
    assert json.loads(node["metadata"]["annotations"][SOURCE_IDS_ANNOTATION]) == {BLOCK: "ocid.b1"}


def test_unchanged_rerun_makes_zero_writes(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    writer = writer_of(fake_kube.cluster())
    desired = Desired(set={ISLAND: "i1", RACK: "r1"}, prune=SCOPE, source_ids={RACK: "id"})
    writer.reconcile("n1", desired)
    fake_kube.clear_journal()
    result = writer.reconcile("n1", desired)
    assert not result.written
    assert fake_kube.count("patch") == 0
    assert fake_kube.count("list") == 0


def test_removes_only_owned_stale_keys(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1", labels={"team": "a", RACK: "by-hand"})
    writer = writer_of(fake_kube.cluster())
    writer.reconcile("n1", Desired(set={ISLAND: "i1", BLOCK: "b1"}, prune=SCOPE))
    writer.reconcile("n1", Desired(set={ISLAND: "i1"}, prune=SCOPE))
    after = labels(fake_kube)
    assert BLOCK not in after  # ours and stale: removed
    assert after[RACK] == "by-hand"  # in scope but never ours: kept
    assert after["team"] == "a"  # out of scope: never touched
    assert fake_kube.get_node("n1")["metadata"]["annotations"][OWNED_ANNOTATION] == ISLAND


def test_leaves_a_foreign_value_and_reports_it(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1", labels={ISLAND: "someone-else"})
    writer = writer_of(fake_kube.cluster())
    result = writer.reconcile("n1", Desired(set={ISLAND: "i1"}, prune=SCOPE))
    assert labels(fake_kube)[ISLAND] == "someone-else"
    assert [c.key for c in result.plan.conflicts] == [ISLAND]
    assert fake_kube.count("patch") == 0
    adopted = writer.reconcile("n1", Desired(set={ISLAND: "i1"}, prune=SCOPE), adopt=True)
    assert adopted.written
    assert labels(fake_kube)[ISLAND] == "i1"


def test_concurrent_change_gives_409_then_replans(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    api = fake_kube.cluster()
    stale = get_node(api, "n1")
    fake_kube.set_node_labels("n1", {"team": "b"})  # someone writes in between
    result = writer_of(api).write(stale, Desired(set={ISLAND: "i1"}))
    assert result.written and result.attempts == 2
    statuses = [r.status for r in fake_kube.requests(method="PATCH")]
    assert statuses == [409, 200]
    assert labels(fake_kube)["team"] == "b"
    assert labels(fake_kube)[ISLAND] == "i1"


def test_invalid_value_is_rejected_with_the_servers_causes(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    with pytest.raises(Invalid) as e:
        writer_of(fake_kube.cluster()).reconcile("n1", Desired(set={ISLAND: "not valid"}))
    assert "metadata.labels" in str(e.value)
    assert ISLAND not in labels(fake_kube)


def test_429_with_retry_after_is_retried(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/n1", status=429, retry_after=1)
    clock = FakeClock()
    writer_of(fake_kube.cluster(), clock).reconcile("n1", Desired(set={ISLAND: "i1"}))
    assert [r.status for r in fake_kube.requests(method="PATCH")] == [429, 200]
    (pause,) = clock.slept
    assert pause >= 1.0  # at least what Retry-After asked for
    assert labels(fake_kube)[ISLAND] == "i1"


def test_forbidden_says_which_rbac_verb_is_missing(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    fake_kube.faults.add(method="PATCH", status=403)
    with pytest.raises(Forbidden, match="lacks 'patch' on 'nodes/n1'"):
        writer_of(fake_kube.cluster()).reconcile("n1", Desired(set={ISLAND: "i1"}))


def test_list_nodes_paginates_and_reads_scheduling_facts(fake_kube: FakeKube) -> None:
    fake_kube.seed_nodes(25, allocatable={"nvidia.com/gpu": "8"})
    fake_kube.add_node("cordoned", unschedulable=True, ready=False)
    nodes, rv = list_nodes(fake_kube.cluster(), page_size=10)
    assert len(nodes) == 26 and len({n.name for n in nodes}) == 26
    assert fake_kube.count("list") == 3
    assert rv
    cordoned = next(n for n in nodes if n.name == "cordoned")
    assert cordoned.unschedulable and not cordoned.ready
    assert next(n for n in nodes if n.name == "node-00000").allocatable["nvidia.com/gpu"] == "8"


def test_lean_node_list_follows_continue_and_keeps_only_what_a_plan_reads(
    fake_kube: FakeKube,
) -> None:
    fake_kube.seed_nodes(23, labels_fn=lambda i: {"x.io/i": str(i)})
    owned = {
        OWNED_ANNOTATION: "x.io/i",
        OWNERS_ANNOTATION: '{"x.io/i": "bulk"}',
        SOURCE_IDS_ANNOTATION: '{"x.io/i": "a"}',
    }
    fake_kube.add_node("n-own", labels={"x.io/i": "own"}, annotations={**owned, "other/a": "1"})
    nodes = list_node_labels(fake_kube.cluster(), page_size=5)
    assert fake_kube.count("list") == 5  # 24 nodes, 5 a page: the continue token was followed
    assert [n.name for n in nodes] == sorted(n.name for n in nodes)
    assert len({n.name for n in nodes}) == 24
    own = next(n for n in nodes if n.name == "n-own")
    assert type(own) is NodeLabels  # not a NodeInfo: status, taints, allocatable dropped
    assert own.labels == fake_kube.get_node("n-own")["metadata"]["labels"]
    assert own.annotations == owned  # "other/a" dropped
    assert own.owned == {"x.io/i"} and own.source_ids == {"x.io/i": "a"}
    assert own.owners == {"x.io/i": "bulk"}  # who owns it survives the lean read
    assert own.resource_version == fake_kube.get_node("n-own")["metadata"]["resourceVersion"]
    assert next(n for n in nodes if n.name == "node-00007").labels["x.io/i"] == "7"
    selected = list_node_labels(fake_kube.cluster(), label_selector="x.io/i=own")
    assert [n.name for n in selected] == ["n-own"]


def test_watch_sees_own_node_change_and_410_is_expired(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    fake_kube.add_node("n2")
    api = fake_kube.cluster()
    start = get_node(api, "n1").resource_version
    threading.Timer(0.2, lambda: fake_kube.set_node_labels("n2", {"a": "1"})).start()
    threading.Timer(0.4, lambda: fake_kube.set_node_labels("n1", {"a": "1"})).start()
    events = watch_nodes(
        api, resource_version=start, field_selector="metadata.name=n1", timeout_seconds=5
    )
    kind, node = next(e for e in events if e[0] != "BOOKMARK")
    assert (kind, node.name, node.labels["a"]) == ("MODIFIED", "n1", "1")

    with FakeKube(history=2) as small:
        small.add_node("n1")
        old = get_node(small.cluster(), "n1").resource_version
        for i in range(5):
            small.set_node_labels("n1", {"i": str(i)})
        with pytest.raises(Expired):
            list(watch_nodes(small.cluster(), resource_version=old, timeout_seconds=2))


def test_kubeconfig_and_context_are_honoured(fake_kube: FakeKube, kubeconfig: str) -> None:
    fake_kube.add_node("n1")
    api = connect(ClusterOptions(kubeconfig=str(kubeconfig), context="fake"))
    assert get_node(api, "n1").name == "n1"


def test_a_server_that_never_answers_times_out_and_is_retried(
    fake_kube: FakeKube, kubeconfig: str
) -> None:
    fake_kube.add_node("n1")
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/n1", delay=8.0, times=1)
    opts = ClusterOptions(kubeconfig=str(kubeconfig), request_timeout=(1.0, 0.5))
    clock = FakeClock()
    result = writer_of(connect(opts), clock).reconcile("n1", Desired(set={ISLAND: "i1"}))
    assert result.written
    # The held answer timed out and the GET was tried again after one pause; without a read
    # timeout the first GET would have waited for the held answer, with no pause at all.
    assert len(clock.slept) == 1


@pytest.mark.parametrize("times", [1, None])
def test_a_patch_applied_whose_reply_was_lost_is_reported_as_written(
    fake_kube: FakeKube, times: int | None
) -> None:
    """The server applied the PATCH, then the connection dropped before the answer: the
    writer re-reads the node and, finding exactly the planned labels, reports it written
    (once: the retry would only get 409 for the stale resourceVersion)."""
    fake_kube.add_node("n1", labels={"team": "a"})
    fake_kube.faults.add(method="PATCH", drop_reply=True, times=times)
    writer = writer_of(fake_kube.cluster())
    result = writer.reconcile("n1", Desired(set={ISLAND: "i1"}, prune=SCOPE))
    assert result.written
    assert labels(fake_kube)[ISLAND] == "i1"
    assert fake_kube.count("patch") == 1


def test_a_lost_reply_settled_only_by_the_retrys_409_is_reported_as_written(
    fake_kube: FakeKube,
) -> None:
    """The server applied the PATCH and went away before answering; the node cannot be
    read then either. The retry, once the server is back, gets 409 (the write itself moved
    the resourceVersion): the node is read, has the planned labels, and the write counts as
    written, not as "unchanged" (as the real API server killed mid-apply showed)."""
    fake_kube.add_node("n1", labels={"team": "a"})
    api = fake_kube.cluster()
    node = get_node(api, "n1")
    fake_kube.faults.add(method="PATCH", drop_reply=True, times=1)
    # Every attempt of the re-read that follows the lost reply goes unanswered (5 attempts,
    # each GET sent twice: urllib3 sends a GET once more when its connection broke).
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/n1", drop=True, times=10)
    clock = FakeClock()
    result = writer_of(api, clock).write(node, Desired(set={ISLAND: "i1"}, prune=SCOPE))
    assert result.written
    assert labels(fake_kube)[ISLAND] == "i1"
    assert fake_kube.count("patch") == 2  # the second one met the 409
    assert len(clock.slept) == 5  # 4 between the 5 unanswered GETs, 1 before the re-PATCH


def test_a_lost_patch_that_did_not_apply_is_still_a_failure(fake_kube: FakeKube) -> None:
    """No answer and the node does not have the labels: an error, never "written"."""
    fake_kube.add_node("n1")
    fake_kube.faults.add(method="PATCH", drop=True, times=None)
    writer = writer_of(fake_kube.cluster())
    with pytest.raises(Exception, match="no answer"):
        writer.reconcile("n1", Desired(set={ISLAND: "i1"}, prune=SCOPE))
    assert ISLAND not in labels(fake_kube)
