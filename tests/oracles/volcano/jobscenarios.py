"""Seeded Volcano Jobs (``batch.volcano.sh/v1alpha1``) for the oracle's scenarios.

A share of the scenarios (``JOB_SHARE``) give ``advise`` a Job rather than a PodGroup and
its pods. The oracle makes the Job into its PodGroup and pods with Volcano's own code (the
Job admission webhooks, then the job controller; tests/oracles/README.md), so both the
session and ``advise``'s conversion are judged. What varies: one to three tasks, named or
left to the webhook's ``default<i>``; replicas; a task's ``minAvailable`` and the job's, set
or defaulted; a ``partitionPolicy`` (partition size and count, ``minPartitions`` set or
left out, its own network topology); the job's network topology; the queue, named or
defaulted; the pod template's requests and constraints as for PodGroup scenarios. Now and
then a Job the validating webhook refuses (a task's ``minAvailable`` other than
``minPartitions`` × ``partitionSize``, or above its replicas; a GPU request without a limit
or with another one).
"""

from __future__ import annotations

import random
from typing import Any

from tests.oracles.volcano import scenarios as S

JOB_SHARE = 0.2  # scenarios whose -f file is a Volcano Job
GPU = "nvidia.com/gpu"
Obj = dict[str, Any]


def _template(rng: random.Random) -> Obj:
    gpu = rng.random() < 0.7
    container = {
        "name": "main",
        "image": "trainer",
        "resources": {"requests": S._requests(rng, gpu)},
    }
    requests = container["resources"]["requests"]
    if gpu:  # an extended resource needs its limit, equal to the request
        roll = rng.random()
        if roll < 0.9:
            container["resources"]["limits"] = {GPU: requests[GPU]}
        elif roll < 0.95:  # refused: another limit
            container["resources"]["limits"] = {GPU: str(int(requests[GPU]) * 2)}
    pod: Obj = {"spec": {"containers": [container]}}
    S._constrain(rng, pod, gpu)
    if rng.random() < 0.2:
        pod["metadata"] = {"labels": {"app": "trainer"}}
    return pod


def _task(rng: random.Random, t: int, tiers: int) -> Obj:
    task: Obj = {"template": _template(rng)}
    if rng.random() < 0.8:
        task["name"] = f"t{t}"
    if rng.random() < 0.35:  # partitioned
        size, parts = rng.choice((1, 2, 2, 3)), rng.choice((1, 2, 2, 3))
        policy: Obj = {"totalPartitions": parts, "partitionSize": size}
        min_parts = rng.randint(0, parts) if rng.random() < 0.85 else None
        if min_parts is not None:
            policy["minPartitions"] = min_parts
        if rng.random() < 0.7 and (nt := S._network_topology(rng, tiers)):
            policy["networkTopology"] = nt
        task["partitionPolicy"] = policy
        task["replicas"] = size * parts
        roll = rng.random()
        if roll < 0.2:  # as the webhook would set it
            task["minAvailable"] = (min_parts or 0) * size
        elif roll < 0.25:  # refused: not minPartitions × partitionSize
            task["minAvailable"] = (min_parts or 0) * size + 1
    else:
        task["replicas"] = rng.choice((1, 2, 3, 4))
        roll = rng.random()
        if roll < 0.3:
            task["minAvailable"] = rng.randint(0, task["replicas"])
        elif roll < 0.33:  # refused: above the replicas
            task["minAvailable"] = task["replicas"] + 1
    return task


def job(rng: random.Random, tiers: int, queue: str) -> Obj:
    """A Volcano Job ``team/train`` for a cluster of ``tiers`` HyperNode tiers."""
    tasks = [_task(rng, t, tiers) for t in range(rng.choice((1, 1, 2, 3)))]
    spec: Obj = {"tasks": tasks}
    if queue != "default" or rng.random() < 0.5:
        spec["queue"] = queue
    if rng.random() < 0.3:
        total = sum(t["replicas"] for t in tasks)
        spec["minAvailable"] = rng.randint(1, total)
    if rng.random() < 0.5:
        spec["schedulerName"] = "volcano"
    if nt := S._network_topology(rng, tiers):
        spec["networkTopology"] = nt
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "team"},
        "spec": spec,
    }


def _of_advised(obj: Obj) -> bool:
    meta = obj.get("metadata") or {}
    if meta.get("namespace") != "team":
        return False
    if obj["kind"] == "PodGroup":
        return bool(meta.get("name") == "train")
    return bool((meta.get("annotations") or {}).get(S.GROUP_ANNOTATION) == "train")


def apply(sc: S.Scenario, seed: int) -> None:
    """For a share of the seeds, the scenario's advised PodGroup and its pods (running ones
    included) give way to a Volcano Job in the same queue."""
    rng = random.Random(seed * 7 + 3)
    if rng.random() >= JOB_SHARE:
        return
    queue = str(sc.job[0]["spec"]["queue"])
    sc.snapshot = [o for o in sc.snapshot if not _of_advised(o)]
    sc.job = [job(rng, sc.tiers, queue)]


def is_job(obj: Obj) -> bool:
    return bool(obj.get("kind") == "Job" and str(obj.get("apiVersion", "")).startswith("batch."))
