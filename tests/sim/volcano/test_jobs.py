"""A Volcano Job expanded as its webhooks and job controller make it. The minResources
table is Volcano's ``TestCalcPGMinResources`` (job_controller_util_test.go) in our words;
the partition labels follow its ``TestCreatePodWithPartitionPolicy``."""

from __future__ import annotations

import re
from typing import Any

import pytest

from labeler.base.errors import InputError
from labeler.sim.volcano.jobs import expand_job
from tests.sim.volcano.objects import job, task


def test_pods_podgroup_and_defaults() -> None:
    gang = expand_job(job(task("master", 1, "1"), task("worker", 2, "2")), "f")
    pg = gang.podgroup
    assert (pg.ref, pg.queue, pg.min_member) == ("ns/j", "default", 3)
    assert pg.min_task_member == {"master": 1, "worker": 2}
    assert [t.name for t in gang.tasks] == ["j-master-0", "j-worker-0", "j-worker-1"]
    w1 = gang.tasks[2]
    assert (w1.role, w1.labels["volcano.sh/task-index"], w1.scheduler) == ("worker", "1", "volcano")
    assert all(t.status == "Pending" for t in gang.tasks)
    unnamed = expand_job(job({**task("", 1, "1"), "name": ""}), "f")
    assert unnamed.tasks[0].name == "j-default0-0"


MASTER, WORKER = "50m", "100m"  # two replicas each, as in Volcano's table


@pytest.mark.parametrize(
    ("job_min", "master_min", "worker_min", "cpu", "pods"),
    [
        (2, 1, None, 100, 2),  # below the tasks' sum: the first two pods (both masters)
        (2, None, 1, 100, 2),
        (3, None, None, 200, 3),  # two masters and a worker
        (3, 1, 1, 200, 3),  # above the sum: each task's minimum, then more replicas
        (3, 1, None, 250, 3),  # equal: one master, two workers
        (2, 1, 1, 150, 2),
    ],
)
def test_min_resources_are_those_of_the_first_min_available_pods(
    job_min: int, master_min: int | None, worker_min: int | None, cpu: int, pods: int
) -> None:
    m = task("master", 2, MASTER) | ({"minAvailable": master_min} if master_min else {})
    w = task("worker", 2, WORKER) | ({"minAvailable": worker_min} if worker_min else {})
    pg = expand_job(job(m, w, minAvailable=job_min), "f").podgroup
    assert pg.min_resources == {"cpu": cpu, "pods": pods}


def test_partitions_become_sub_groups_with_partition_ids() -> None:
    partitioned = task(
        "worker",
        6,
        "1",
        partitionPolicy={
            "totalPartitions": 3,
            "partitionSize": 2,
            "minPartitions": 2,
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        },
    )
    gang = expand_job(
        job(partitioned, networkTopology={"mode": "hard", "highestTierAllowed": 2}), "f"
    )
    pg = gang.podgroup
    assert pg.min_member == 4 and pg.min_task_member == {"worker": 4}
    (policy,) = pg.subgroups
    assert (policy.name, policy.size, policy.min_subgroups) == ("worker", 2, 2)
    assert policy.match_label_keys == ("volcano.sh/partition-id",)
    assert policy.network_topology is not None and policy.network_topology.highest_tier == 1
    assert [t.labels["volcano.sh/partition-id"] for t in gang.tasks] == [
        "0",
        "0",
        "1",
        "1",
        "2",
        "2",
    ]
    old = expand_job(job(partitioned), "f", (1, 13))
    assert old.podgroup.subgroups == () and old.podgroup.min_member == 6
    assert old.notes and "partitionPolicy" in old.notes[0]


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        (job(), "No task specified in job spec"),
        (job(task("w", 1, "1"), task("w", 1, "1")), "duplicated task name w"),
        (job(task("w", 1, "1", minAvailable=2)), "'minAvailable' is greater than 'replicas'"),
        (job(task("w", 2, "1"), minAvailable=3), "should not be greater than total replicas"),
        (job(task("w", 5, "1", partitionPolicy={"totalPartitions": 2, "partitionSize": 2})),
         "'Replicas' are not equal to TotalPartitions*PartitionSize"),
        (job(task("w", 4, "1", minAvailable=3,
                  partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1})),
         "'MinAvailable' is not equal to MinPartitions*PartitionSize"),
        (job(task("w", 4, "1", partitionPolicy={"totalPartitions": 0, "partitionSize": 2})),
         "'TotalPartitions' must be greater than 0"),
        (job(task("a" * 70, 1, "1")), "create pod with name j-" + "a" * 70 + "-0 validate failed"),
    ],
)  # fmt: skip
def test_admission_refusals_name_the_job(doc: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError) as e:
        expand_job(doc, "job.yaml")
    text = str(e.value)
    assert "job.yaml (Job ns/j)" in text and words in text


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        (job(task("w", -1, "1")), "spec.tasks[0].replicas: -1 is below 0"),
        (job(task("w", 1, "1", minAvailable="1")), "spec.tasks[0].minAvailable: '1' is not a"),
        (job(task("w", 1, "1"), minAvailable=True), "spec.minAvailable: True is not a whole"),
    ],
)  # fmt: skip
def test_a_count_that_is_not_a_whole_number_names_its_field(
    doc: dict[str, Any], words: str
) -> None:
    with pytest.raises(InputError, match=re.escape(words)):
        expand_job(doc, "job.yaml")


def test_partitions_without_min_partitions_leave_the_task_out_of_the_gang() -> None:
    """v1.15.0's mutating webhook sets such a task's minAvailable to minPartitions (0) ×
    partitionSize, and the validating one refuses any other minAvailable."""
    parts = {"totalPartitions": 2, "partitionSize": 2}
    gang = expand_job(job(task("w", 4, "1", partitionPolicy=parts)), "f")
    assert gang.podgroup.min_member == 0 and gang.podgroup.min_task_member == {"w": 0}
    assert any("without minPartitions" in n and "set minPartitions" in n for n in gang.notes)
    with pytest.raises(InputError, match=re.escape("'MinAvailable' is not equal to MinPart")):
        expand_job(job(task("w", 4, "1", minAvailable=4, partitionPolicy=parts)), "f")


def gpu_task(requests: str, limits: str | None) -> dict[str, Any]:
    t = task("w", 1, "1")
    res = t["template"]["spec"]["containers"][0]["resources"]
    res["requests"]["nvidia.com/gpu"] = requests
    if limits is not None:
        res["limits"] = {"nvidia.com/gpu": limits}
    return t


@pytest.mark.parametrize(
    ("limit", "words"),
    [
        (
            None,
            "spec.task[0].template.spec.containers[0].resources.limits: Required value: "
            "Limit must be set for non overcommitable resources.",
        ),
        (
            "4",
            'spec.task[0].template.spec.containers[0].resources.requests: Invalid value: "2": '
            "must be equal to nvidia.com/gpu limit of 4.",
        ),
    ],
)
def test_an_extended_resource_needs_its_limit_equal_to_the_request(
    limit: str | None, words: str
) -> None:
    """The webhook runs Kubernetes' pod template validation on every task."""
    with pytest.raises(InputError) as err:
        expand_job(job(gpu_task("2", limit)), "f")
    assert words in str(err.value)
    gang = expand_job(job(gpu_task("2", "2")), "f")
    assert gang.tasks[0].requests["nvidia.com/gpu"] == 2


def test_pods_carry_the_job_controllers_labels() -> None:
    pod = expand_job(job(task("w", 1, "1"), queue="q"), "f").tasks[0]
    assert pod.labels == {
        "volcano.sh/job-name": "j",
        "volcano.sh/job-namespace": "ns",
        "volcano.sh/queue-name": "q",
        "volcano.sh/task-index": "0",
        "volcano.sh/task-spec": "w",
    }


def test_a_task_counted_with_no_pod_adds_no_resource_name() -> None:
    """minPartitions 0 makes the task's minAvailable 0: its GPUs are not in minResources."""
    parted = {**gpu_task("1", "1"), "replicas": 2}
    parted["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 1, "minPartitions": 0}
    gang = expand_job(job(parted, task("m", 1, "1")), "f")
    assert gang.podgroup.min_resources == {"cpu": 1000, "pods": 1}


def test_the_job_min_available_the_webhook_set_is_checked_against_the_replicas() -> None:
    """No job minAvailable: the mutating webhook sets the tasks' sum (2), above 1 replica."""
    with pytest.raises(InputError) as err:
        expand_job(job(task("w", 1, "1", minAvailable=2)), "f")
    assert "'minAvailable' is greater than 'replicas' in task: w, job: j" in str(err.value)
    assert "job 'minAvailable' should not be greater than total replicas in tasks" in str(err.value)
