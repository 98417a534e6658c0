"""Ascend multi-level jobs: the ``huawei.com/affinity-config`` annotation, made and checked.

ascend-for-volcano schedules a job level by level when it carries
``huawei.com/schedule_policy: multilevel`` and ``huawei.com/affinity-config:
level1=n1,level2=n2,…``: ``levelK=n`` means "groups of n pods, each inside one domain of
resource level K" (level1 = the narrowest level of ``resource-level-config``). It refuses
the job when the config breaks one of these rules, which :func:`affinity_problems` names:

- every entry is ``levelK=<integer>`` (comma-separated, one ``=`` each);
- the levels are consecutive from level1 (levels 1…N for N entries);
- each size is at least 1 and a multiple of the size of the level below it;
- the job's replica count is a multiple of the widest size;
- there are no more levels than the tree has (a job level must map to a resource level).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labeler.base.errors import UsageError
from labeler.core.model import Topology
from labeler.core.profiles import ASCEND_TREE_LABEL
from labeler.sim.kueue.assign import Job, Mode

SCHEDULE_POLICY_ANNOTATION = "huawei.com/schedule_policy"
MULTILEVEL = "multilevel"
AFFINITY_CONFIG_ANNOTATION = "huawei.com/affinity-config"
_LEVEL = re.compile(r"level([1-9][0-9]*)")
_GO_ATOI = re.compile(r"[-+]?[0-9]+")  # what Go's strconv.Atoi accepts


@dataclass(frozen=True)
class AffinityConfig:
    """Pods per domain, level1 (narrowest) first."""

    sizes: tuple[int, ...]

    def text(self) -> str:
        return ",".join(f"level{i}={n}" for i, n in enumerate(self.sizes, start=1))


def affinity_problems(text: str, replicas: int, tree_levels: int) -> list[str]:
    """Every rule ``text`` breaks, each naming the rule; empty when ascend-for-volcano takes it."""
    sizes: dict[int, int] = {}
    problems: list[str] = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or "=" in value:
            problems.append(f"{part!r}: each entry is levelK=N (one '=')")
            continue
        m = _LEVEL.fullmatch(key)
        if not m:
            problems.append(f"{key!r}: level names are level1, level2, …")
            continue
        if not _GO_ATOI.fullmatch(value):
            problems.append(f"{part!r}: the size must be a whole number")
            continue
        sizes[int(m.group(1))] = int(value)
    if problems:
        return problems
    count = len(text.split(","))
    if sorted(sizes) != list(range(1, count + 1)):
        return [
            f"levels must be consecutive from level1 (level1…level{count} for {count} "
            f"entries), got {', '.join(f'level{k}' for k in sorted(sizes))}"
        ]
    if count > tree_levels:
        problems.append(
            f"{count} levels, but the tree has {tree_levels} (resource-level-config level1…"
            f"level{tree_levels}); use at most {tree_levels}"
        )
    for k in range(1, count + 1):
        if sizes[k] < 1:
            problems.append(f"level{k}={sizes[k]}: each size must be at least 1")
    if problems:
        return problems
    for k in range(2, count + 1):
        if sizes[k] % sizes[k - 1]:
            problems.append(
                f"level{k}={sizes[k]} is not a multiple of level{k - 1}={sizes[k - 1]}: each "
                "size must be a multiple of the one below it"
            )
    if replicas % sizes[count]:
        problems.append(
            f"{replicas} replicas is not a multiple of level{count}={sizes[count]}: the "
            "replica count must be a multiple of every level's size"
        )
    return problems


def derive_affinity(topology: Topology, job: Job, level: int | None) -> AffinityConfig | None:
    """The affinity config for a Kueue-style request, or None when it sets no bound.

    ``level`` is the tree level (0 = widest) the whole job must stay in (required mode
    only: ascend-for-volcano has no soft mode); slice layers give the narrower sizes. A
    level without its own size takes the size of the one below it (level1: 1 pod), which
    keeps every size a multiple of the one below.
    """
    n = len(topology.levels)
    explicit: dict[int, int] = {}  # resource level number (1 = narrowest) -> pods
    for layer in job.slices:
        if layer.level < n:
            explicit[n - layer.level] = layer.size
    if job.mode == Mode.REQUIRED and level is not None and level < n:
        explicit[n - level] = job.count
    if not explicit:
        return None
    sizes: list[int] = []
    for k in range(1, max(explicit) + 1):
        sizes.append(explicit.get(k, sizes[-1] if sizes else 1))
    return AffinityConfig(tuple(sizes))


def check_affinity_flag(text: str, replicas: int, topology: Topology, profile_name: str) -> None:
    """UsageError naming every ascend-for-volcano rule ``--affinity-config`` breaks."""
    if topology.tree_label != ASCEND_TREE_LABEL:
        raise UsageError(
            f"--affinity-config is read by ascend-for-volcano, which needs a profile whose "
            f"tree label is {ASCEND_TREE_LABEL} (profile {profile_name!r} has "
            f"{topology.tree_label or 'none'})"
        )
    if replicas < 1:
        raise UsageError("the replica count must be at least 1")
    problems = affinity_problems(text, replicas, len(topology.levels))
    if problems:
        raise UsageError(
            f"--affinity-config {text!r} would be refused by ascend-for-volcano: "
            + "; ".join(problems)
        )
