"""What ``advise`` is asked about, and so which scheduler answers.

``-f FILE`` is read and parsed here, once; the scheduler is decided from its objects' kinds
and API groups in one table (``OWNERS``), and the advisor of that scheduler is handed the
parsed objects. Without a file, ``--podgroup`` is Volcano's, ``--workload`` Kueue's, and the
flags alone describe Kueue's single PodSet.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from labeler.base.errors import InputError, UsageError


class Asked(StrEnum):
    """Who answers: a scheduler, named as its users name it, or Kueue for the single
    PodSet that the flags describe when no object is given."""

    VOLCANO = "Volcano"
    KUBE_SCHEDULER = "kube-scheduler"
    KUEUE = "Kueue"
    FLAGS = "flags"


KUEUE_KINDS = ("Workload", "Job", "JobSet", "LeaderWorkerSet")
WHAT_ADVISE_READS = (
    "a Kueue Workload, Job, JobSet or LeaderWorkerSet; a Volcano Job (batch.volcano.sh) or "
    "PodGroup (scheduling.volcano.sh) with its pods; or kube-scheduler PodGroups or "
    "CompositePodGroups (scheduling.k8s.io) with their pods"
)


@dataclass(frozen=True)
class Manifest:
    """The objects of the -f file, in the file's order (Lists unpacked)."""

    path: str
    objects: tuple[Mapping[str, Any], ...]

    def where(self, index: int) -> str:
        """How an error names the object at ``index``."""
        return f"{self.path}: items[{index}]"


def _volcano(obj: Mapping[str, Any]) -> bool:
    from labeler.sim.volcano.snapshot import is_volcano_job, is_volcano_podgroup

    return is_volcano_job(obj) or is_volcano_podgroup(obj)


def _kube_scheduler(obj: Mapping[str, Any]) -> bool:
    from labeler.sim.kubesched.objects import is_scheduling_k8s

    return is_scheduling_k8s(obj)


def _kueue(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") in KUEUE_KINDS


# Which scheduler a file's objects are for, asked in this order: a Volcano Job is also a
# "Job", and a List of PodGroups holds plain Pods, so the more specific groups go first.
OWNERS: tuple[tuple[Asked, Callable[[Mapping[str, Any]], bool]], ...] = (
    (Asked.VOLCANO, _volcano),
    (Asked.KUBE_SCHEDULER, _kube_scheduler),
    (Asked.KUEUE, _kueue),
)


def read_manifest(path: str) -> Manifest:
    """Every object of ``path`` (a YAML stream, JSON, a List or typed List, one object)."""
    from labeler.sim.common.cluster import items_of
    from labeler.sim.common.inputs import load_file

    hint = f"give {WHAT_ADVISE_READS}"
    doc = load_file(path, what="manifest", hint=hint)
    one = isinstance(doc, Mapping) and ("kind" in doc or isinstance(doc.get("items"), list))
    if not (one or isinstance(doc, list)):
        raise InputError(f"{path}: not a Kubernetes object or List; {hint}")
    return Manifest(path, tuple(o for o in items_of(doc, path) if isinstance(o, Mapping)))


def scheduler_of(manifest: Manifest) -> Asked:
    """The scheduler whose objects the file holds (the first of ``OWNERS`` that has any)."""
    for scheduler, owns in OWNERS:
        if any(owns(o) for o in manifest.objects):
            return scheduler
    kinds = sorted({str(o.get("kind")) for o in manifest.objects})
    found = f"it holds {', '.join(kinds)}" if kinds else "it holds no object"
    raise InputError(
        f"{manifest.path}: nothing advise can answer for ({found}); give {WHAT_ADVISE_READS}"
    )


def choose(args: argparse.Namespace) -> tuple[Asked, Manifest | None]:
    """The scheduler this command line asks, and the -f file's objects (None without -f).
    Flags that belong to another scheduler are usage errors, before anything else is read."""
    if args.podgroup:
        if args.file or args.workload:
            raise UsageError("--podgroup, -f and --workload each name the job: give one")
        return Asked.VOLCANO, None
    manifest = read_manifest(args.file) if args.file else None
    if manifest is not None:
        scheduler = scheduler_of(manifest)
    else:
        scheduler = Asked.KUEUE if args.workload else Asked.FLAGS
    if args.scheduler_conf and scheduler is not Asked.VOLCANO:
        raise UsageError("--scheduler-conf is Volcano's: give a Volcano Job or PodGroup")
    return scheduler, manifest
