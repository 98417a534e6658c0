"""The agent loop in-process against the fake API server, with a scripted source, on a fake
clock: the test moves time to have the source read again or a retry come, never sleeps.

Faster than the subprocess tests, so the timing-free rules are checked here: a source error
keeps the labels, the steady state sends nothing, Events are rate-limited and never fatal,
and the watch survives 410, dropped connections and an API server restart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from labeler.agent.config import AgentConfig
from labeler.agent.loop import Agent
from labeler.base.metrics import agent_metrics
from labeler.core.labels import parse_encoding
from labeler.core.node import OWNED_ANNOTATION
from labeler.core.profiles import oci_rdma
from labeler.kube.events import NodeEvents
from labeler.sources import NoData, Reading, SourceError
from labeler.sources.oci_imds import ISLAND, LOCAL_BLOCK, NETWORK_BLOCK, ROLES
from tests.clock import FakeClock
from tests.fakekube import FakeKube
from tests.helpers import wait_for
from tests.live import started, stopped

P = oci_rdma()
K = P.keys_for(ROLES)  # role → label key
IDS = {ISLAND: "ocid1.i", NETWORK_BLOCK: "ocid1.nb", LOCAL_BLOCK: "ocid1.lb"}
LABEL_KEYS = {K[role] for role in IDS}


class Scripted:
    """A source whose next answers a test sets; the last one repeats."""

    name = "scripted"
    roles = ROLES

    def __init__(self, *answers: Reading | NoData | SourceError) -> None:
        self.answers = list(answers)
        self.reads = 0

    def read(self) -> Reading | NoData:
        self.reads += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, SourceError):
            raise answer
        return answer


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    got = registry.get_sample_value(name, labels)
    return 0.0 if got is None else got


def reads_again(clock: FakeClock, source: Scripted, times: int = 1) -> None:
    """Move time on until the source has been read ``times`` more times."""
    reads = source.reads + times
    clock.run("source", lambda: source.reads >= reads, what=f"{reads} reads")


def test_steady_state_sends_no_request_at_all(
    fake_kube: FakeKube, running: Callable[..., Agent], clock: FakeClock
) -> None:
    fake_kube.add_node("n1")
    source = Scripted(Reading(IDS))
    agent = running(source)
    assert wait_for(lambda: agent.ready)
    # The watch has brought the node as written, and the loop holds it.
    rv = fake_kube.get_node("n1")["metadata"]["resourceVersion"]
    wait_for(lambda: agent.step.node is not None and agent.step.node.resource_version == rv)
    clock.idle("loop", "source")
    fake_kube.clear_journal()
    reads_again(clock, source, 3)
    clock.idle("loop", "source")  # the loop has handled the last read
    counts = fake_kube.counts()
    assert counts.get("patch", 0) == 0 and counts.get("list", 0) == 0
    assert counts.get("get", 0) == 0  # re-reads use the node the watch delivered
    reg = agent.metrics.registry
    assert value(reg, "topology_labeler_label_writes_total", result="success") == 1
    assert value(reg, "topology_labeler_node_labeled") == 1


def test_a_source_error_keeps_the_labels_and_is_counted(
    fake_kube: FakeKube, running: Callable[..., Agent], clock: FakeClock
) -> None:
    fake_kube.add_node("n1")
    source = Scripted(Reading(IDS), SourceError("IMDS down"))
    agent = running(source)
    reg = agent.metrics.registry
    assert wait_for(lambda: agent.ready)
    reads_again(clock, source, 3)
    clock.idle("loop", "source")
    assert value(reg, "topology_labeler_source_reads_total", source="scripted", result="error") == 3
    labels = fake_kube.get_node("n1")["metadata"]["labels"]
    assert LABEL_KEYS.issubset(labels)
    assert agent.ready
    reasons = [e.get("reason") for e in fake_kube.objects("Event")]
    assert reasons.count("TopologySourceUnavailable") == 1  # rate-limited
    assert reasons.count("TopologyLabelsUpdated") == 1


def test_first_read_error_then_no_data_becomes_ready_without_writing(
    fake_kube: FakeKube, running: Callable[..., Agent], clock: FakeClock
) -> None:
    fake_kube.add_node("n1")
    source = Scripted(SourceError("IMDS down"), NoData("404"))
    agent = running(source)
    clock.run("source", lambda: agent.ready, what="ready")
    assert fake_kube.count("patch") == 0


def test_event_failures_are_not_fatal_and_repeats_are_suppressed(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1")
    now = [0.0]
    events = NodeEvents(fake_kube.cluster(), "n1", clock=lambda: now[0])
    events.uid = "u-1"
    assert events.emit("Normal", "TopologyLabelsUpdated", "a=1")
    (event,) = fake_kube.objects("Event")
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "n1",
        "uid": "u-1",
    }
    assert event["source"]["component"] == "topology-labeler"
    assert event["metadata"]["namespace"] == "default"
    assert not events.emit("Normal", "TopologyLabelsUpdated", "a=2")  # within 30 s
    now[0] = 31
    assert not events.emit("Normal", "TopologyLabelsUpdated", "a=1")  # same text within 10 min
    assert events.emit("Normal", "TopologyLabelsUpdated", "a=2")
    fake_kube.faults.add("POST", ".*/events", status=403, times=None)
    now[0] = 100
    assert not events.emit("Warning", "TopologyLabelConflict", "x")  # logged, not raised


# --- the watch and the API server misbehaving -------------------------------------------

FAST_API = {"interval": 600.0, "api_backoff": 0.05}


def labeled(fake: FakeKube) -> bool:
    return LABEL_KEYS.issubset(fake.get_node("n1")["metadata"]["labels"])


def drift_is_repaired(fake: FakeKube, clock: FakeClock) -> None:
    """A hand-deleted label comes back, through the watch's event or, while the watch waits
    to try again, the GET that comes before it watches again."""
    fake.set_node_labels("n1", {K[LOCAL_BLOCK]: None})
    clock.run("watch", lambda: labeled(fake), what="the label back")


def test_after_a_410_the_watch_starts_again_from_a_fresh_get(clock: FakeClock) -> None:
    """The watch's resourceVersion expires while it is between requests (no bookmarks):
    the next watch gets 410, the agent GETs the node and watches from there."""
    with FakeKube(history=3) as fake:
        fake.bookmark_interval = 3600
        fake.add_node("n1")
        fake.add_node("other")
        agent = Agent(
            fake.cluster(),
            Scripted(Reading(IDS)),
            AgentConfig(
                node="n1",
                profile=P,
                encoding=parse_encoding("hash"),
                min_write_interval=0.0,
                **FAST_API,
            ),
            metrics=agent_metrics(CollectorRegistry()),
            clock=clock,
        )
        thread = started(agent)
        try:
            assert wait_for(lambda: agent.ready and labeled(fake))
            for i in range(5):  # push n1's version out of the history
                fake.set_node_labels("other", {"i": str(i)})
            old = fake.get_node("n1")["metadata"]["resourceVersion"]
            gets = fake.count("get")
            fake.end_watches()  # the watch request's timeout: it watches again from ``old``
            assert wait_for(
                lambda: any(
                    r.query.get("resourceVersion") == old for r in fake.requests(verb="watch")
                )
            )
            # The 410 is a failed watch: the re-GET comes after the backoff.
            clock.run("watch", lambda: fake.count("get") > gets, what="the re-GET after the 410")
            drift_is_repaired(fake, clock)
        finally:
            stopped(fake, agent, thread)


def test_dropped_watch_connections_are_retried_and_labels_kept(
    fake_kube: FakeKube, running: Callable[..., Agent], clock: FakeClock
) -> None:
    fake_kube.add_node("n1")
    agent = running(Scripted(Reading(IDS)), **FAST_API)
    assert wait_for(lambda: agent.ready and labeled(fake_kube))
    fake_kube.faults.add(method="GET", path="/api/v1/nodes", drop=True, times=3)
    fake_kube.faults.add(method="GET", path="/api/v1/nodes", status=503, times=2)
    fake_kube.end_watches()  # the next watch request meets the faults
    clock.run("watch", lambda: len(fake_kube.faults) == 0, what="every fault hit")
    assert labeled(fake_kube)
    drift_is_repaired(fake_kube, clock)


def test_an_api_server_restart_is_survived(
    fake_kube: FakeKube, running: Callable[..., Agent], clock: FakeClock
) -> None:
    """The server goes away (open watch cut, connections refused) and comes back on the
    same port with its store (etcd) intact: the agent resumes without a human."""
    fake_kube.add_node("n1")
    agent = running(Scripted(Reading(IDS)), **FAST_API)
    assert wait_for(lambda: agent.ready and labeled(fake_kube))
    fake_kube.go_away()
    clock.idle("watch")  # its watch cut, it waits to try again
    fake_kube.come_back()
    assert labeled(fake_kube)
    drift_is_repaired(fake_kube, clock)


def test_a_failed_write_is_retried_with_backoff_not_at_the_next_interval(
    fake_kube: FakeKube, running: Callable[..., Agent], clock: FakeClock
) -> None:
    """5xx on every PATCH attempt of one reconcile: nothing is removed, and the agent tries
    again soon (with backoff) rather than after --interval."""
    fake_kube.add_node("n1", labels={"team": "a"})
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/n1", status=500, times=5)
    agent = running(Scripted(Reading(IDS)), **FAST_API)
    reg = agent.metrics.registry
    assert wait_for(lambda: value(reg, "topology_labeler_label_writes_total", result="error") >= 1)
    assert fake_kube.get_node("n1")["metadata"]["labels"]["team"] == "a"
    assert not agent.ready
    clock.idle("loop")
    failed_at = clock.now
    clock.run("loop", lambda: labeled(fake_kube), what="the labels written")
    assert clock.now - failed_at <= FAST_API["api_backoff"]  # not the next --interval
    assert wait_for(lambda: agent.ready)  # set just after the PATCH returns


def _once_while_bulk_apply_lands(fake_kube: FakeKube, agent: Agent, bulk: dict[str, str]) -> None:
    """Run ``agent.once()``; between its GET and its PATCH, "bulk apply" writes ``bulk``
    (owned), so the agent's PATCH answers 409 and the agent must plan again."""
    held = threading.Event()
    patch = fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/n1", hold=held)
    fake_kube.clear_journal()
    thread = threading.Thread(target=agent.once, daemon=True)
    thread.start()
    wait_for(lambda: patch.hits == 1, what="the agent's PATCH")

    def bulk_apply(obj: dict[str, Any]) -> None:
        obj["metadata"]["labels"].update(bulk)
        obj["metadata"].setdefault("annotations", {})[OWNED_ANNOTATION] = ",".join(sorted(bulk))

    fake_kube.update_node("n1", bulk_apply)
    held.set()
    thread.join(10)
    assert not thread.is_alive()


def _agent(fake_kube: FakeKube, source: Scripted, profile: Any = P, **kw: Any) -> Agent:
    api = fake_kube.cluster()
    encoding = parse_encoding(profile.encoding)
    config = AgentConfig(node="n1", profile=profile, encoding=encoding, **kw)
    return Agent(api, source, config, metrics=agent_metrics(CollectorRegistry()), clock=FakeClock())


def test_a_409_replans_from_the_fresh_node_so_a_tree_set_meanwhile_is_kept(
    fake_kube: FakeKube,
) -> None:
    """The agent fills in a tree label only where there is none. If bulk apply sets the
    tree between the agent's GET and PATCH, the re-plan after 409 must see it, not send
    the stale "tree := default" over the planning sheet's tree."""
    from labeler.core.profiles import ASCEND_SUPERPOD, ASCEND_TREE_LABEL, ascend_superpod
    from labeler.sources import ascend

    fake_kube.add_node("n1")
    profile = ascend_superpod()
    source = Scripted(Reading({ascend.SUPERPOD: "7"}))
    source.roles = ascend.ROLES
    agent = _agent(fake_kube, source, profile)
    _once_while_bulk_apply_lands(fake_kube, agent, {ASCEND_TREE_LABEL: "sheet-tree"})
    labels = fake_kube.get_node("n1")["metadata"]["labels"]
    assert labels[ASCEND_TREE_LABEL] == "sheet-tree"
    assert labels[ASCEND_SUPERPOD] == "7"
    assert fake_kube.count("patch") == 2  # the 409, then the re-planned write


def test_a_409_replans_from_the_fresh_node_so_isolate_never_hides_real_values(
    fake_kube: FakeKube,
) -> None:
    """``--on-missing isolate`` fills only missing levels; values that bulk apply wrote
    between the agent's GET and PATCH must survive the re-plan after 409."""
    fake_kube.add_node("n1")
    agent = _agent(fake_kube, Scripted(NoData("404")), on_missing="isolate")
    _once_while_bulk_apply_lands(fake_kube, agent, dict.fromkeys(P.level_keys, "real"))
    labels = fake_kube.get_node("n1")["metadata"]["labels"]
    assert {labels[k] for k in P.level_keys} == {"real"}
