"""Workloads as Kueue sees them: PodSets with counts, pod shapes and topology requests.

A Kueue ``Workload`` carries its PodSets; a batch ``Job``, a ``JobSet`` or a
``LeaderWorkerSet`` is turned into PodSets the way Kueue's job integrations do
(``pkg/controller/jobs/...``):

- Job: one PodSet ``main``, count = min(parallelism, completions).
- JobSet: one PodSet per replicatedJob, named after it, count = replicas × that.
- LeaderWorkerSet: one Workload per group (``spec.replicas`` of them); a PodSet ``leader``
  of 1 pod when a leader template is given and ``worker`` of size-1 pods, else ``main`` of
  size pods.

The topology request comes from the pod template's ``kueue.x-k8s.io/podset-*``
annotations (``jobframework.NewPodSetTopologyRequest``): required, else preferred, else
unconstrained, else slices only; a group name counts only beside required or preferred.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labeler.base.errors import InputError
from labeler.sim.common.cluster import Toleration
from labeler.sim.common.fields import as_map, whole
from labeler.sim.common.shape import PodShape, shape_of
from labeler.sim.kueue.advice import (
    PREFERRED_ANNOTATION,
    REQUIRED_ANNOTATION,
    SLICE_CONSTRAINTS_ANNOTATION,
    SLICE_SIZE_ANNOTATION,
    SLICE_TOPOLOGY_ANNOTATION,
)
from labeler.sim.kueue.assign import Job, Mode, SliceLayer

GROUP_ANNOTATION = "kueue.x-k8s.io/podset-group-name"


@dataclass(frozen=True)
class TopologyRequest:
    """A PodSet's topology request with label keys (resolved to levels per topology)."""

    mode: Mode = Mode.UNCONSTRAINED
    level: str | None = None
    slices: tuple[tuple[str, int], ...] = ()
    group: str | None = None


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    shape: PodShape
    request: TopologyRequest


@dataclass(frozen=True)
class Workload:
    """What Kueue admits as one unit. ``name`` says where it came from."""

    name: str
    podsets: tuple[PodSet, ...]
    namespace: str = ""
    uid: str = ""


def request_from_annotations(annotations: Mapping[str, Any], where: str) -> TopologyRequest:
    """The topology request Kueue builds from a pod template's annotations."""
    a = {str(k): str(v) for k, v in annotations.items()}
    group = a.get(GROUP_ANNOTATION)
    slices: tuple[tuple[str, int], ...] = ()
    if SLICE_CONSTRAINTS_ANNOTATION in a:
        try:
            layers = json.loads(a[SLICE_CONSTRAINTS_ANNOTATION])
            slices = tuple((str(x["topology"]), int(x["size"])) for x in layers)
        except (ValueError, TypeError, KeyError) as e:
            raise InputError(
                f"{where}: {SLICE_CONSTRAINTS_ANNOTATION}: expected a JSON list of "
                '{"topology": KEY, "size": N}'
            ) from e
        if not 1 <= len(slices) <= 3:
            raise InputError(f"{where}: {SLICE_CONSTRAINTS_ANNOTATION}: 1 to 3 layers")
    elif SLICE_TOPOLOGY_ANNOTATION in a and SLICE_SIZE_ANNOTATION in a:
        size = a[SLICE_SIZE_ANNOTATION]
        if not size.isdigit():
            raise InputError(f"{where}: {SLICE_SIZE_ANNOTATION}: {size!r} is not a number")
        slices = ((a[SLICE_TOPOLOGY_ANNOTATION], int(size)),)
    if REQUIRED_ANNOTATION in a:
        return TopologyRequest(Mode.REQUIRED, a[REQUIRED_ANNOTATION], slices, group)
    if PREFERRED_ANNOTATION in a:
        return TopologyRequest(Mode.PREFERRED, a[PREFERRED_ANNOTATION], slices, group)
    # unconstrained, slices only, or no annotation (a PodSet in a TAS flavor is then
    # "implied" TAS): all are placed without a level constraint
    return TopologyRequest(Mode.UNCONSTRAINED, None, slices)


def request_from_workload(raw: Any, where: str) -> TopologyRequest:
    """``spec.podSets[].topologyRequest`` of a Workload."""
    tr = as_map(raw)
    slices: tuple[tuple[str, int], ...] = ()
    constraints = tr.get("podsetSliceRequiredTopologyConstraints")
    if constraints:
        slices = tuple((str(c["topology"]), int(c["size"])) for c in constraints)
    elif tr.get("podSetSliceRequiredTopology") and tr.get("podSetSliceSize") is not None:
        slices = ((str(tr["podSetSliceRequiredTopology"]), int(tr["podSetSliceSize"])),)
    group = tr.get("podSetGroupName")
    group = str(group) if group else None
    if tr.get("required"):
        return TopologyRequest(Mode.REQUIRED, str(tr["required"]), slices, group)
    if tr.get("preferred"):
        return TopologyRequest(Mode.PREFERRED, str(tr["preferred"]), slices, group)
    return TopologyRequest(Mode.UNCONSTRAINED, None, slices)


def _template_podset(name: str, count: int, template: Any, where: str) -> PodSet:
    meta = as_map(as_map(template).get("metadata"))
    return PodSet(
        name=name,
        count=count,
        shape=shape_of(template, where),
        request=request_from_annotations(as_map(meta.get("annotations")), where),
    )


def _job_pods(spec: Mapping[str, Any], where: str) -> int:
    parallelism = whole(spec.get("parallelism"), f"{where}.parallelism", default=1)
    completions = whole(spec.get("completions"), f"{where}.completions", default=parallelism)
    return min(parallelism, completions)


def workloads_from_object(obj: Mapping[str, Any], where: str) -> list[Workload]:
    """A Workload, Job, JobSet or LeaderWorkerSet → the Workload(s) Kueue would queue."""
    kind = obj.get("kind")
    meta = as_map(obj.get("metadata"))
    name = str(meta.get("name") or "")
    ns = str(meta.get("namespace") or "")
    uid = str(meta.get("uid") or "")
    spec = as_map(obj.get("spec"))
    label = f"{kind} {ns + '/' if ns else ''}{name}"
    here = f"{where} ({label})"
    if kind == "Workload":
        podsets = []
        for i, ps in enumerate(spec.get("podSets") or []):
            ps = as_map(ps)
            at = f"{here}: spec.podSets[{i}]"
            podsets.append(
                PodSet(
                    name=str(ps.get("name") or "main"),
                    count=whole(ps.get("count"), f"{at}.count", default=1),
                    shape=shape_of(ps.get("template"), at),
                    request=request_from_workload(ps.get("topologyRequest"), at),
                )
            )
        out = [Workload(label, tuple(podsets), ns, uid)]
    elif kind == "Job":
        at = f"{here}: spec"
        count = _job_pods(spec, at)
        out = [
            Workload(label, (_template_podset("main", count, spec.get("template"), at),), ns, uid)
        ]
    elif kind == "JobSet":
        podsets = []
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            rj = as_map(rj)
            at = f"{here}: spec.replicatedJobs[{i}]"
            job_spec = as_map(as_map(rj.get("template")).get("spec"))
            replicas = whole(rj.get("replicas"), f"{at}.replicas", default=1)
            count = replicas * _job_pods(job_spec, f"{at}.template.spec")
            podsets.append(
                _template_podset(str(rj.get("name")), count, job_spec.get("template"), at)
            )
        out = [Workload(label, tuple(podsets), ns, uid)]
    elif kind == "LeaderWorkerSet":
        lwt = as_map(spec.get("leaderWorkerTemplate"))
        at = f"{here}: spec.leaderWorkerTemplate"
        size = whole(lwt.get("size"), f"{at}.size", default=1)
        replicas = whole(spec.get("replicas"), f"{here}: spec.replicas", default=1)
        podsets = []
        workers_name, workers = "main", size
        if lwt.get("leaderTemplate") is not None:
            podsets.append(_template_podset("leader", 1, lwt["leaderTemplate"], f"{at}.leader"))
            workers_name, workers = "worker", size - 1
        podsets.append(
            _template_podset(workers_name, workers, lwt.get("workerTemplate"), f"{at}.worker")
        )
        out = [Workload(f"{label} group {g}", tuple(podsets), ns, uid) for g in range(replicas)]
    else:
        raise InputError(
            f"{where}: kind {kind!r} is not a Workload, Job, JobSet or LeaderWorkerSet"
        )
    for wl in out:
        if not wl.podsets:
            raise InputError(f"{where} ({wl.name}): no PodSets")
    return out


def with_tolerations(podset: PodSet, extra: Sequence[Toleration]) -> PodSet:
    """The PodSet with a ResourceFlavor's tolerations added (Kueue appends them)."""
    if not extra:
        return podset
    shape = PodShape(
        requests=podset.shape.requests,
        tolerations=podset.shape.tolerations + tuple(extra),
        node_selector=podset.shape.node_selector,
        affinity=podset.shape.affinity,
    )
    return PodSet(podset.name, podset.count, shape, podset.request)


def to_job(podset: PodSet, keys: Sequence[str], *, leaders: int = 0) -> Job | str:
    """The simulator's Job for ``podset`` on a topology with level ``keys``, or Kueue's
    reason why it cannot be placed on that topology at all."""
    req = podset.request
    lowest = len(keys) - 1
    level: int | None = None
    if req.level is not None:
        if req.level not in keys:
            return f"no requested topology level: {req.level}"
        level = keys.index(req.level)
    layers = []
    for key, size in req.slices:
        if key not in keys:
            return f"no requested topology level for slices: {key}"
        if size <= 0:
            return "slice topology requested, but slice size not provided"
        layers.append(SliceLayer(keys.index(key), size))
    if req.mode == Mode.UNCONSTRAINED and not layers:
        level = lowest
    return Job(
        count=podset.count,
        mode=req.mode,
        level=level,
        slices=tuple(layers),
        leaders=leaders,
    )
