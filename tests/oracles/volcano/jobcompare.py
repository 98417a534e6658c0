"""A Volcano Job's conversion, advise's against Volcano's own (the admission webhooks and
the job controller the oracle runs): the PodGroup and pods as the scheduler reads them, or
the webhook's refusal."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from labeler.base.errors import InputError
from labeler.sim.volcano.jobs import expand_job
from labeler.sim.volcano.model import Gang, Task, gang_of, podgroup_from_object
from tests.oracles.volcano.jobscenarios import is_job

Obj = dict[str, Any]
# What the scheduler reads of the PodGroup; its name and phase are not compared (the
# controller names it after the Job's UID, which a new Job has not got).
PODGROUP_FIELDS = (
    "queue",
    "min_member",
    "min_task_member",
    "min_resources",
    "network_topology",
    "subgroups",
)


def given_job(folder: Path) -> Obj | None:
    """The -f file's Volcano Job, or None when it holds a PodGroup."""
    first = next(iter(yaml.safe_load_all((folder / "job.yaml").read_text())), None)
    return first if isinstance(first, dict) and is_job(first) else None


def _as_read(t: Task) -> Task:
    """A pod as the session reads it, without what the API server or the session sets."""
    return dataclasses.replace(t, uid="", created="", status="", node="", annotations={})


def _volcano_gang(converted: Obj) -> Gang:
    pg = podgroup_from_object(converted["podGroup"], "oracle: converted PodGroup")
    return gang_of(pg, converted["pods"], "oracle: converted pods")


def refusal_differences(a: Obj, refused: str) -> list[str]:
    """Volcano's webhook refused the Job: advise must refuse it with the same findings. The
    webhook strings its findings together ("; " after its own, ". " after the pod
    template's, nothing after a partition's), so each of advise's findings must be in
    Volcano's message, and nothing but separators be left of it."""
    error = str(a.get("error", ""))
    found = [line.split("): ", 1)[1] for line in error.splitlines()[1:] if "): " in line]
    left = refused
    for f in found:
        words = f.rstrip(".")
        if words not in left:
            return [f"refusal: advise's {f!r} is not in Volcano's {refused.strip()!r}"]
        left = left.replace(words, "", 1)
    if not found or left.strip(" ;."):
        return [f"refusal: Volcano {refused.strip()!r} vs advise {error or 'accepted the Job'!r}"]
    return []


def conversion_differences(folder: Path, o: Obj) -> list[str]:
    """What differs between advise's conversion of the folder's Job and Volcano's."""
    job = given_job(folder)
    if job is None or "converted" not in o:
        return []
    try:
        mine = expand_job(job, "job.yaml")
    except InputError as e:
        return [f"conversion: advise refuses the Job Volcano admits: {e}"]
    theirs = _volcano_gang(o["converted"])
    out = []
    for f in PODGROUP_FIELDS:
        a, v = getattr(mine.podgroup, f), getattr(theirs.podgroup, f)
        if a != v:
            out.append(f"conversion: PodGroup {f}: advise {a!r} vs Volcano {v!r}")
    pods_a = {t.name: _as_read(t) for t in mine.tasks}
    pods_v = {t.name: _as_read(t) for t in theirs.tasks}
    if sorted(pods_a) != sorted(pods_v):
        out.append(f"conversion: pods: advise {sorted(pods_a)} vs Volcano {sorted(pods_v)}")
    for name in sorted(set(pods_a) & set(pods_v)):
        if pods_a[name] != pods_v[name]:
            out.append(f"conversion: pod {name}: advise {pods_a[name]} vs Volcano {pods_v[name]}")
    return out
