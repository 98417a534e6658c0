"""A read made while a broken watch's error is being handled is judged by its own answer.

The agent re-reads its node inside ``except KubeError`` after a watch breaks; Python links
the new error to the old one (``__context__``). The sequence is the network's: a watch cut
mid-stream between two events, then the GET answered 404, 403, 500 or not at all. Each
must be reported as what it is, never as the cut that came before it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from labeler.kube.errors import Forbidden, KubeError, NotFound, Retryable
from labeler.kube.nodes import get_node, watch_nodes
from tests.fakekube import FakeKube

CUT = "IncompleteRead"  # urllib3: the chunked answer ended between two chunks


def _cut_watch(fake: FakeKube) -> KubeError:
    """A node watch that streamed an event, then was cut mid-stream: its error."""
    events = watch_nodes(fake.cluster(), resource_version="0", timeout_seconds=60)
    assert next(events)[0] == "ADDED"
    assert fake.cut_watches("nodes") == 1
    with pytest.raises(KubeError) as cut:
        for _ in events:
            pass
    return cut.value


def _deleted(fake: FakeKube) -> None:
    fake.delete_node("n1")


def _forbidden(fake: FakeKube) -> None:
    fake.faults.add(method="GET", path="/api/v1/nodes/n1", status=403, times=None)


def _failing(fake: FakeKube) -> None:
    fake.faults.add(method="GET", path="/api/v1/nodes/n1", status=500, times=None)


@pytest.mark.parametrize(
    ("break_it", "kind", "says", "gets"),
    [
        (_deleted, NotFound, "get nodes/n1: not found", 1),
        (_forbidden, Forbidden, "403 Forbidden: the RBAC role lacks 'get' on 'nodes/n1'", 1),
        (_failing, Retryable, "get nodes/n1: 500 Internal Server Error", 5),
        (FakeKube.go_away, Retryable, "no answer from the API server at 127.0.0.1", 0),
    ],
    ids=["404", "403", "500", "refused"],
)
def test_the_re_read_after_a_cut_watch_reports_its_own_error(
    fake_kube: FakeKube,
    break_it: Callable[[FakeKube], None],
    kind: type[KubeError],
    says: str,
    gets: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_kube.add_node("n1")
    api = fake_kube.cluster()
    cut = _cut_watch(fake_kube)
    assert CUT in str(cut)  # the watch's own error says what happened
    break_it(fake_kube)
    fake_kube.clear_journal()
    try:
        raise cut
    except KubeError:  # as the agent does: the re-read runs while the cut is handled
        with pytest.raises(KubeError) as reread:
            get_node(api, "n1")
    err = reread.value
    assert type(err) is kind
    assert says in str(err)
    assert "Connection refused" in str(err) if gets == 0 else CUT not in str(err)
    # NotFound and Forbidden are answers: reported at once, not retried as a failure.
    assert len(fake_kube.requests("GET", "/api/v1/nodes/n1")) == gets
    assert not [r for r in caplog.records if CUT in r.getMessage() and r.levelno >= logging.INFO]
