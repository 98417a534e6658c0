"""``plan``, ``apply`` and ``delete`` of 1,000 nodes on the real API server, with a
concurrent writer (real 409s from real resourceVersions) and with the tool squeezed by API
Priority and Fairness to one seat (real 429s): every row is accounted for and the summary
is true."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest

from tests.helpers import wait_for
from tests.realkube import cluster, processes
from tests.realkube.controlplane import ControlPlane, metric_sum

N = 1000
KEYS = ("huawei.com/topotree.groupid", "huawei.com/topotree.superpodid")
SUMMARY = re.compile(r"^(\d+) node\(s\): (.*) \((\d+) patches", re.M)


def names(prefix: str, n: int = N) -> list[str]:
    return [f"{prefix}-{i:04d}" for i in range(n)]


@pytest.fixture
def nodes(
    real_kube: ControlPlane, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[list[str]]:
    """N bare nodes of this test's own, created in one kubectl call."""
    prefix = "rb" + str(abs(hash(request.node.name)) % 10_000)
    made = names(prefix)
    cluster.create_nodes(real_kube, made, tmp_path, prefix)
    yield made
    cluster.delete_set(real_kube, prefix)


def write_csv(path: Path, made: list[str]) -> Path:
    lines = ["nodeName," + ",".join(KEYS)]
    lines += [f"{name},{i // 48},{i // 384}" for i, name in enumerate(made)]
    path.write_text("\n".join(lines) + "\n")
    return path


def bulk(
    plane: ControlPlane, *args: str, kubeconfig: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return processes.cli(*args, kubeconfig=kubeconfig or plane.kubeconfig)


def summary(out: str) -> tuple[int, dict[str, int], int]:
    match = SUMMARY.search(out)
    assert match, out[-2000:]
    counts = {what: int(n) for n, what in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", match.group(2))}
    return int(match.group(1)), counts, int(match.group(3))


def server_metric(plane: ControlPlane, name: str, *labels: str) -> float:
    """The API server's own counter ``name``, summed over its series that carry every one
    of ``labels`` (``'code="409"'``)."""
    return metric_sum(plane.kubectl("get", "--raw", "/metrics").stdout, name, *labels)


def requests_answered(plane: ControlPlane, code: str) -> float:
    """How many node PATCHes the API server answered with ``code`` so far."""
    node_patches = ('resource="nodes"', 'verb="PATCH"')
    return server_metric(plane, "apiserver_request_total", f'code="{code}"', *node_patches)


def all_labels(plane: ControlPlane, made: list[str]) -> dict[str, dict[str, str]]:
    wanted = set(made)
    items = json.loads(plane.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    return {
        n["metadata"]["name"]: n["metadata"].get("labels", {})
        for n in items
        if n["metadata"]["name"] in wanted
    }


def test_plan_apply_delete_of_a_thousand_nodes(
    real_kube: ControlPlane, nodes: list[str], tmp_path: Path
) -> None:
    csv = write_csv(tmp_path / "cluster.csv", nodes)
    plan = bulk(real_kube, "plan", "--config-path", str(csv))
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.count(": add huawei.com/topotree.groupid=") == N

    first = bulk(real_kube, "apply", "--config-path", str(csv))
    assert first.returncode == 0, first.stderr
    rows, counts, patches = summary(first.stdout + first.stderr)
    assert (rows, counts.get("labeled"), patches) == (N, N, N)
    labels = all_labels(real_kube, nodes)
    assert all(
        labels[name]["huawei.com/topotree.groupid"] == str(i // 48) for i, name in enumerate(nodes)
    )

    again = bulk(real_kube, "apply", "--config-path", str(csv))
    assert again.returncode == 0, again.stderr
    assert summary(again.stdout + again.stderr)[1].get("unchanged") == N
    assert summary(again.stdout + again.stderr)[2] == 0

    gone = bulk(real_kube, "delete", "--config-path", str(csv))
    assert gone.returncode == 0, gone.stderr
    assert summary(gone.stdout + gone.stderr)[1].get("cleaned") == N
    assert not any(set(KEYS) & set(v) for v in all_labels(real_kube, nodes).values())


def test_a_concurrent_writer_is_never_overwritten(
    real_kube: ControlPlane, nodes: list[str], tmp_path: Path
) -> None:
    """While apply runs, another client sets one of the same keys on some nodes: the real
    server answers the tool's stale writes with 409, the tool re-reads and reports those
    keys as conflicts (not its own), and every row is counted once."""
    csv = write_csv(tmp_path / "cluster.csv", nodes)
    # The rival writes the last nodes of the CSV, from the last back, once the tool has
    # begun to write (so after its LIST): the tool's patches of those carry a stale
    # resourceVersion.
    raced = nodes[-100:][::-1]
    api = cluster.core(real_kube)

    def rival() -> None:
        wait_for(
            lambda: KEYS[0] in cluster.labels_of(real_kube, nodes[0]),
            timeout=60,
            what="apply under way",
            interval=0.05,
        )
        for name in raced:
            api.patch_node(name, {"metadata": {"labels": {KEYS[0]: "rival"}}})

    conflicts = requests_answered(real_kube, "409")
    writer = threading.Thread(target=rival)
    writer.start()
    result = bulk(real_kube, "apply", "--config-path", str(csv), "--concurrency", "2")
    writer.join()
    assert requests_answered(real_kube, "409") > conflicts, "no write of the tool met a 409"
    rows, counts, _ = summary(result.stdout + result.stderr)
    assert rows == N and sum(counts.values()) == N, counts
    labels = all_labels(real_kube, nodes)
    # The rival's value stands wherever the rival wrote; the tool wrote everywhere else.
    assert all(labels[name][KEYS[0]] == "rival" for name in raced)
    conflicted = {name for name in raced if f"{name}: conflict {KEYS[0]}" in result.stdout}
    assert counts.get("with conflicts", 0) == len(conflicted)
    assert counts.get("labeled", 0) == N - len(conflicted)


FLOW = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bulk-tool}
rules:
  - apiGroups: [""]
    resources: [nodes]
    verbs: [get, list, watch, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bulk-tool}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bulk-tool}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: bulk-tool}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: topology-labeler-squeeze}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: topology-labeler-squeeze}
spec:
  priorityLevelConfiguration: {name: topology-labeler-squeeze}
  matchingPrecedence: 100
  rules:
    - subjects: [{kind: User, user: {name: bulk-tool}}]
      resourceRules:
        - verbs: ["*"]
          apiGroups: ["*"]
          resources: ["*"]
          clusterScope: true
          namespaces: ["*"]
"""


def rejected(plane: ControlPlane) -> float:
    """How many requests the squeeze's priority level refused."""
    level = 'priority_level="topology-labeler-squeeze"'
    return server_metric(plane, "apiserver_flowcontrol_rejected_requests_total", level)


def test_squeezed_by_priority_and_fairness_every_row_is_accounted_for(
    real_kube: ControlPlane, nodes: list[str], tmp_path: Path
) -> None:
    """A FlowSchema sends the tool's user to a priority level of one seat that rejects what
    it cannot queue: the real server answers 429 with Retry-After. The run retries, and its
    summary counts each of the 1,000 rows exactly once, true to the cluster."""
    real_kube.kubectl("apply", "-f", "-", input=FLOW)
    # Not in system:masters: the API server exempts that group from every priority level.
    user = real_kube.user_kubeconfig("bulk-tool", "bulk-tool")
    csv = write_csv(tmp_path / "cluster.csv", nodes)
    # Another client of the same user keeps the level's seats taken while the tool runs, so
    # that the squeeze does not depend on how fast this machine lets the tool send.
    stop = threading.Event()
    crowd = cluster.core(real_kube, user)

    def crowding() -> None:
        while not stop.is_set():
            with contextlib.suppress(kubernetes.client.ApiException):
                crowd.list_node(limit=500)

    threads = [threading.Thread(target=crowding) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        result = bulk(
            real_kube, "apply", "--config-path", str(csv), "--concurrency", "32", kubeconfig=user
        )
        refused = rejected(real_kube)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        real_kube.kubectl(
            "delete", "flowschema,prioritylevelconfiguration", "topology-labeler-squeeze"
        )
        real_kube.kubectl("delete", "clusterrole,clusterrolebinding", "bulk-tool")
    assert refused > 0, "the squeeze never made the server answer 429"
    assert "429" in result.stderr, "the tool itself never met a 429"
    rows, counts, patches = summary(result.stdout + result.stderr)
    assert rows == N and sum(counts.values()) == N, counts
    labels = all_labels(real_kube, nodes)
    done = {name for name, got in labels.items() if KEYS[0] in got}
    assert counts.get("labeled", 0) == len(done) == patches
    failed = counts.get("failed", 0)
    assert failed == N - len(done)
    assert (result.returncode == 0) == (failed == 0)
