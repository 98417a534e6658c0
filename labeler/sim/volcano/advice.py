"""``advise`` for Volcano: the verdict of one cycle, the per-tier table and the traps."""

from __future__ import annotations

from dataclasses import dataclass, field

from labeler.core.volcano import VERSION
from labeler.sim.volcano.conf import SchedulerConf
from labeler.sim.volcano.cycle import Cycle
from labeler.sim.volcano.hypernodes import HyperNodeTree
from labeler.sim.volcano.model import PENDING, Gang, PodGroup
from labeler.sim.volcano.simulate import Cluster, CycleResult, Verdict, run_cycle
from labeler.sim.volcano.tiers import TierRow, smallest, tier_table
from labeler.sim.volcano.traps import (
    configuration_traps,
    outside_traps,
    partition_traps,
    queue_traps,
    task_traps,
    tier_traps,
)


@dataclass
class Advice:
    gang: Gang
    run: CycleResult  # the cycle, and what its session settled on
    tiers: list[TierRow]
    tree: HyperNodeTree
    conf: SchedulerConf
    traps: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hypernode_source: str = ""

    @property
    def verdict(self) -> Verdict:
        return self.run.verdict

    @property
    def podgroup(self) -> PodGroup:
        """The PodGroup as the session sees it (tier names resolved, soft made hard)."""
        return self.run.podgroup

    @property
    def pending(self) -> int:
        return sum(1 for t in self.gang.tasks if t.status == PENDING)

    @property
    def fits(self) -> bool:
        """Volcano would bind the pending pods (all placed already counts as fitting)."""
        return bool(self.verdict.binds) or (self.pending == 0 and self.verdict.ready)

    def smallest_now(self) -> TierRow | None:
        return smallest(self.tiers, empty=False)

    def smallest_empty(self) -> TierRow | None:
        return smallest(self.tiers, empty=True)


def advise(
    gang: Gang,
    cluster: Cluster,
    conf: SchedulerConf,
    tree: HyperNodeTree,
    version: tuple[int, int] = VERSION,
) -> Advice:
    """Everything ``advise`` says about one Volcano gang."""
    run = run_cycle(gang, cluster, conf, tree, version)
    verdict, podgroup = run.verdict, run.podgroup
    session_gang = Gang(podgroup, gang.tasks, gang.origin, gang.notes)
    empty = run.node_states(empty=True)
    ml = run.multilevel
    rows = tier_table(
        session_gang,
        conf,
        tree,
        run.node_states(empty=False),
        empty,
        multilevel=None if isinstance(ml, str) else ml,
    )
    static = Cycle(conf, tree, {}, scores=False).static
    traps = [
        *configuration_traps(conf, gang.podgroup),
        *tier_traps(tree, podgroup, gang.podgroup, version),
        *queue_traps(run.queue, gang.podgroup, cluster.queues, cluster.nodes),
        *task_traps(gang.tasks, cluster.nodes),
    ]
    if conf.enabled("network-topology-aware", "hyperNodeGradient"):  # else no bound holds
        traps += outside_traps(tree, podgroup, gang.tasks, cluster.nodes, static)
        traps += partition_traps(session_gang, conf, tree, empty)
    notes = [*gang.notes, *verdict.notes, *tree.notes]
    if skipped := conf.not_simulated():
        notes.append(f"plugins not simulated: {', '.join(skipped)}")
    return Advice(
        gang=gang,
        run=run,
        tiers=rows,
        tree=tree,
        conf=conf,
        traps=list(dict.fromkeys(traps)),
        notes=notes,
        hypernode_source=cluster.hypernode_source,
    )
