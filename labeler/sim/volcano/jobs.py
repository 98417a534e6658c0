"""A Volcano Job (``batch.volcano.sh/v1alpha1``) as its webhooks and job controller make it.

Admission first (``webhooks/admission/jobs``): the mutating webhook fills defaults (queue
``default``, task names ``default<i>``, a task's ``minAvailable`` from its partitions or its
replicas, the job's ``minAvailable`` as the sum over tasks), the validating one refuses
what it refuses, in its words. Then the controller (``controllers/job``): one PodGroup
(``minMember``, ``minTaskMember``, ``minResources`` of the first ``minAvailable`` pods by
task priority, ``networkTopology``, one ``subGroupPolicy`` per partitioned task) and pods
``<job>-<task>-<index>`` labelled with their task, index and partition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labeler.base.errors import InputError
from labeler.core.quantity import CPU, parse_quantity
from labeler.core.volcano import VERSION, TopologyMode
from labeler.sim.common.cluster import pod_requests
from labeler.sim.common.fields import as_map, whole
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.model import (
    DEFAULT_QUEUE,
    GROUP_ANNOTATION,
    PARTITION_ID,
    PODGROUP_API,
    TASK_SPEC,
    Gang,
    gang_of,
    podgroup_from_object,
    strings,
)

SUBGROUPS_SINCE = (1, 14)
TASK_INDEX = "volcano.sh/task-index"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


@dataclass(frozen=True)
class TaskSpec:
    name: str
    replicas: int
    min_available: int
    template: Mapping[str, Any]
    partition: Mapping[str, Any] | None


def _tasks(spec: Mapping[str, Any], here: str, *, partitions: bool) -> list[TaskSpec]:
    """The tasks with the mutating webhook's defaults; without ``partitions`` (Volcano
    before 1.14) a ``partitionPolicy`` is dropped, as the API server drops the field."""
    out = []
    for i, raw in enumerate(spec.get("tasks") or []):
        t = as_map(raw)
        where = f"{here}: spec.tasks[{i}]"
        replicas = whole(t.get("replicas"), f"{where}.replicas", default=0)
        keep = partitions and t.get("partitionPolicy") is not None
        part = as_map(t.get("partitionPolicy")) if keep else None
        min_parts = whole(
            (part or {}).get("minPartitions"), f"{where}.partitionPolicy.minPartitions", default=0
        )
        size = whole(
            (part or {}).get("partitionSize"), f"{where}.partitionPolicy.partitionSize", default=0
        )
        # The mutating webhook (v1.14, v1.15.0): with a partitionPolicy, minPartitions ×
        # partitionSize, 0 when minPartitions is left out (later releases: the replicas).
        default = min_parts * size if part is not None else replicas
        out.append(
            TaskSpec(
                name=str(t.get("name") or f"default{i}"),
                replicas=replicas,
                min_available=whole(
                    t.get("minAvailable"), f"{where}.minAvailable", default=default
                ),
                template=as_map(t.get("template")),
                partition=part,
            )
        )
    return out


def _nt_problem(raw: Any) -> str:
    nt = as_map(raw)
    if nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        return (
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology "
            "simultaneously"
        )
    return ""


def _partition_problem(t: TaskSpec, job: str) -> str:
    p = t.partition
    if p is None:
        return ""
    total, size = int(p.get("totalPartitions") or 0), int(p.get("partitionSize") or 0)
    at = f"in task: {t.name}, job: {job}"
    if total <= 0:
        return f"'TotalPartitions' must be greater than 0 {at}"
    if size <= 0:
        return f"'PartitionSize' must be greater than 0 {at}"
    if t.replicas != total * size:
        return f"'Replicas' are not equal to TotalPartitions*PartitionSize {at}"
    # v1.14 and v1.15.0 check it whatever minPartitions is (the mutating webhook has set
    # minAvailable by now); later releases only when minPartitions is set.
    min_parts = int(p.get("minPartitions") or 0)
    if min_parts * size != t.min_available:
        return f"'MinAvailable' is not equal to MinPartitions*PartitionSize {at}"
    return _nt_problem(p.get("networkTopology"))


def _overcommit_allowed(resource: str) -> bool:
    """``IsOvercommitAllowed``: a native resource (no domain, or ``kubernetes.io``) that is
    not ``hugepages-*``; extended resources such as ``nvidia.com/gpu`` are not."""
    native = "/" not in resource or "kubernetes.io/" in resource
    return native and not resource.startswith("hugepages-")


def _template_problems(t: TaskSpec, index: int) -> list[str]:
    """The pod template's resource rules of Kubernetes' pod validation, which the webhook
    runs (``validateTaskTemplate``): a resource that cannot be overcommitted (an extended
    one, hugepages) needs a limit equal to its request. Limits alone are fine: defaulting
    copies them to the requests."""
    out = []
    spec = as_map(t.template.get("spec"))
    for kind in ("initContainers", "containers"):
        for j, raw in enumerate(spec.get(kind) or []):
            res = as_map(as_map(raw).get("resources"))
            requests, limits = as_map(res.get("requests")), as_map(res.get("limits"))
            at = f"spec.task[{index}].template.spec.{kind}[{j}].resources"
            for name, qty in requests.items():
                if _overcommit_allowed(str(name)):
                    continue
                if name not in limits:
                    out.append(
                        f"{at}.limits: Required value: Limit must be set for non "
                        "overcommitable resources."
                    )
                elif parse_quantity(str(qty)) != parse_quantity(str(limits[name])):
                    out.append(
                        f'{at}.requests: Invalid value: "{qty}": must be equal to '
                        f"{name} limit of {limits[name]}."
                    )
    return out


def job_min_available(spec: Mapping[str, Any], tasks: Sequence[TaskSpec], where: str) -> int:
    """The job's ``minAvailable`` once the mutating webhook has set it: when 0 or left out,
    the sum of the tasks' (defaulted) ``minAvailable``; the validating webhook checks this
    one against the replicas."""
    return whole(spec.get("minAvailable"), where, default=0) or sum(t.min_available for t in tasks)


def admission_problems(name: str, spec: Mapping[str, Any], tasks: Sequence[TaskSpec]) -> list[str]:
    """What the validating webhook refuses (``validateJobCreate``), in its words."""
    if not tasks:
        return ["No task specified in job spec"]
    problems = [p for p in [_nt_problem(spec.get("networkTopology"))] if p]
    seen: set[str] = set()
    for index, t in enumerate(tasks):
        if t.min_available > t.replicas:
            problems.append(
                f"'minAvailable' is greater than 'replicas' in task: {t.name}, job: {name}"
            )
        if t.name in seen:
            problems.append(f"duplicated task name {t.name}")
            break
        seen.add(t.name)
        pod = f"{name}-{t.name}-{index}"
        if len(pod) > 63 or not _QUALIFIED.fullmatch(pod):
            problems.append(
                f"create pod with name {pod} validate failed: a pod name must be at most 63 "
                "characters of letters, digits, '-', '_' or '.', starting and ending with a "
                "letter or digit"
            )
        problems += _template_problems(t, index)
        if problem := _partition_problem(t, name):
            problems.append(problem)
    total = sum(t.replicas for t in tasks)
    if job_min_available(spec, tasks, "spec.minAvailable") > total:
        problems.append("job 'minAvailable' should not be greater than total replicas in tasks")
    return problems


def _min_resources(tasks: Sequence[TaskSpec], job_min: int, where: str) -> dict[str, int]:
    """``calcPGMinResources`` (task priority classes unknown: all equal, in spec order)."""
    per_pod = {}
    for t in tasks:
        spec = {"spec": as_map(t.template.get("spec"))}
        per_pod[t.name] = R.add(pod_requests(spec, f"{where}: task {t.name}"), {"pods": 1})

    def times(t: TaskSpec, n: int) -> dict[str, int]:
        # CalTaskRequests adds the pod's usage n times: none at all for n = 0, so a task
        # counted with no pod adds no name, not a name at 0.
        return {k: v * n for k, v in per_pod[t.name].items()} if n > 0 else {}

    out: dict[str, int] = {}
    if job_min < sum(t.min_available for t in tasks):
        left = job_min
        for t in tasks:
            out = R.add(out, times(t, min(left, t.replicas)))
            left -= min(left, t.replicas)
            if left <= 0:
                break
        return out
    count = 0
    for t in tasks:
        n = min(t.min_available, job_min - count)
        out, count = R.add(out, times(t, n)), count + n
        if count >= job_min:
            return out
    left = job_min - count
    for t in tasks:
        extra = min(t.replicas - t.min_available, left)
        if extra > 0:
            out, left = R.add(out, times(t, extra)), left - extra
        if left <= 0:
            break
    return out


def _topology(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    nt = as_map(raw)
    out: dict[str, Any] = {"mode": nt.get("mode") or TopologyMode.HARD.value}
    if nt.get("highestTierAllowed") is not None:
        out["highestTierAllowed"] = nt["highestTierAllowed"]
    elif nt.get("highestTierName"):
        out["highestTierName"] = nt["highestTierName"]
    return out


def _subgroup(t: TaskSpec) -> dict[str, Any]:
    p = t.partition or {}
    out: dict[str, Any] = {
        "name": t.name,
        "subGroupSize": int(p.get("partitionSize") or 0),
        "minSubGroups": int(p.get("minPartitions") or 0),
        "labelSelector": {"matchLabels": {TASK_SPEC: t.name}},
        "matchLabelKeys": [PARTITION_ID],
    }
    if p.get("networkTopology") is not None:
        nt = as_map(p["networkTopology"])
        out["networkTopology"] = {
            k: v for k, v in nt.items() if k in ("mode", "highestTierAllowed", "highestTierName")
        }
    return out


def _pods(
    meta: Mapping[str, Any], spec: Mapping[str, Any], tasks: Sequence[TaskSpec], group: str
) -> list[dict[str, Any]]:
    name, ns = str(meta["name"]), str(meta.get("namespace") or "default")
    queue = str(spec.get("queue") or DEFAULT_QUEUE)
    out = []
    for t in tasks:
        tmeta, tspec = as_map(t.template.get("metadata")), dict(as_map(t.template.get("spec")))
        tspec.setdefault("schedulerName", spec.get("schedulerName") or "volcano")
        for i in range(t.replicas):
            labels = {**strings(tmeta.get("labels")), TASK_INDEX: str(i), JOB_NAME: name,
                      TASK_SPEC: t.name, JOB_NAMESPACE: ns, QUEUE_NAME: queue}  # fmt: skip
            if t.partition is not None:
                size = int(t.partition.get("partitionSize") or 0)
                labels[PARTITION_ID] = str(i // size if size > 0 else 0)
            annotations = {**strings(tmeta.get("annotations")), TASK_INDEX: str(i),
                           TASK_SPEC: t.name, GROUP_ANNOTATION: group, JOB_NAME: name}  # fmt: skip
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-{t.name}-{i}",
                        "namespace": ns,
                        "labels": labels,
                        "annotations": annotations,
                    },
                    "spec": tspec,
                    "status": {"phase": "Pending"},
                }
            )
    return out


def expand_job(obj: Mapping[str, Any], where: str, version: tuple[int, int] = VERSION) -> Gang:
    """The PodGroup and pods Volcano makes from the Job (InputError: what admission refuses)."""
    meta, spec = as_map(obj.get("metadata")), as_map(obj.get("spec"))
    name = str(meta.get("name") or "")
    if not name:
        raise InputError(f"{where}: a Volcano Job needs metadata.name")
    ns = str(meta.get("namespace") or "default")
    here = f"{where} (Job {ns}/{name})"
    notes: list[str] = []
    partitions = version >= SUBGROUPS_SINCE
    tasks = _tasks(spec, here, partitions=partitions)
    problems = admission_problems(name, spec, tasks)
    if problems:
        raise InputError(
            [f"{here}: {p}" for p in problems],
            heading=f"{here}: Volcano's admission webhook refuses this Job:",
        )
    if not partitions and any(as_map(t).get("partitionPolicy") for t in spec.get("tasks") or []):
        notes.append(
            f"Volcano {version[0]}.{version[1]} has no partitionPolicy (1.14+): the API server "
            "drops it, so the partitions are not simulated"
        )
    for t in tasks:
        if t.partition is not None and t.min_available == 0 and t.replicas > 0:
            notes.append(
                f"task {t.name}: a partitionPolicy without minPartitions makes Volcano's "
                "webhook (1.14, 1.15) set the task's minAvailable to 0 (minPartitions × "
                "partitionSize), so none of its pods counts for the gang; set minPartitions"
            )
    job_min = job_min_available(spec, tasks, f"{here}: spec.minAvailable")
    uid = str(meta.get("uid") or "")
    group = f"{name}-{uid}" if uid else name
    pg_spec: dict[str, Any] = {
        "minMember": job_min,
        "minTaskMember": {t.name: t.min_available for t in tasks},
        "queue": str(spec.get("queue") or DEFAULT_QUEUE),
        "minResources": {
            k: f"{v}m" if k == CPU else str(v)
            for k, v in _min_resources(tasks, job_min, here).items()
        },
    }
    if (nt := _topology(spec.get("networkTopology"))) is not None:
        pg_spec["networkTopology"] = nt
    if subgroups := [_subgroup(t) for t in tasks if t.partition is not None]:
        pg_spec["subGroupPolicy"] = subgroups
    pg_obj = {
        "apiVersion": f"{PODGROUP_API}/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": group,
            "namespace": ns,
            "annotations": strings(meta.get("annotations")),
        },
        "spec": pg_spec,
        "status": {"phase": "Pending"},
    }
    pg = podgroup_from_object(pg_obj, here)
    gang = gang_of(pg, _pods(meta, spec, tasks, group), here)
    return Gang(gang.podgroup, gang.tasks, origin=f"Job {ns}/{name}", notes=tuple(notes))
