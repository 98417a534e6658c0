"""Confirming a topology change before it is written: the flip-flop cases."""

from __future__ import annotations

from labeler.agent.confirm import Confirmation, Signature, recorded_signature, signature
from labeler.core.node import NodeLabels
from labeler.core.plan import Desired, plan_labels
from labeler.sources import Reading

LEVELS = ("island", "block")
RDMA = Signature("rdma", (("island", "i1"), ("block", "b1")))
HOST = Signature("host", (("island", "n9"), ("block", "n9")))


def test_a_one_off_answer_is_held_and_the_baseline_resets_it() -> None:
    c = Confirmation(2)
    assert c.offer(None, RDMA)  # first labeling: at once
    assert not c.offer(RDMA, HOST) and c.pending == 1
    assert c.offer(RDMA, RDMA) and c.pending == 0  # back: the one-off is forgotten
    assert not c.offer(RDMA, HOST)  # flip-flop: never two in a row, never written
    assert c.offer(RDMA, RDMA)


def test_a_lasting_change_is_written_after_n_reads() -> None:
    c = Confirmation(3)
    assert not c.offer(RDMA, HOST)
    assert not c.offer(RDMA, HOST)
    assert c.offer(RDMA, HOST)
    assert Confirmation(1).offer(RDMA, HOST)  # 1: no confirmation


def test_the_baseline_read_back_from_the_node_ignores_the_document_kind() -> None:
    keys = {"island": "k/island", "block": "k/block"}
    recorded = recorded_signature({"k/island": "i1", "k/block": "b1"}, keys, LEVELS)
    reading = Reading(ids={"island": "i1", "block": "b1"}, details={"source": "rdma"})
    assert recorded is not None and signature(reading, LEVELS).agrees(recorded)
    assert recorded_signature({}, keys, LEVELS) is None  # never labeled by us


def test_a_placeholder_is_replaced_without_adopt() -> None:
    node = NodeLabels("n1", labels={"k/island": "no-imds-data", "k/block": "theirs"})
    want = Desired(set={"k/island": "v", "k/block": "v"}, placeholders=frozenset({"no-imds-data"}))
    plan = plan_labels(node, want)
    assert plan.labels == {"k/island": "v"}
    assert [c.key for c in plan.conflicts] == ["k/block"]  # a real foreign value stays
