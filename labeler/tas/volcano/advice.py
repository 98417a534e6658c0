"""``advise`` for Volcano: the verdict of one cycle, the per-tier table and the traps."""

from __future__ import annotations

from dataclasses import dataclass, field

from labeler.core.volcano import VERSION
from labeler.tas.volcano.conf import SchedulerConf
from labeler.tas.volcano.cycle import Cycle
from labeler.tas.volcano.hypernodes import HyperNodeTree
from labeler.tas.volcano.model import PENDING, Gang, PodGroup
from labeler.tas.volcano.simulate import (
    Cluster,
    Verdict,
    adjust,
    multilevel_of,
    node_states,
    queue_of,
    run_cycle,
)
from labeler.tas.volcano.tiers import TierRow, smallest, tier_table
from labeler.tas.volcano.traps import (
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
    podgroup: PodGroup  # as the session sees it (tier names resolved, soft made hard)
    verdict: Verdict
    tiers: list[TierRow]
    tree: HyperNodeTree
    conf: SchedulerConf
    traps: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hypernode_source: str = ""

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
    verdict = run_cycle(gang, cluster, conf, tree, version)
    podgroup, _ = adjust(gang.podgroup, tree, version)
    session_gang = Gang(podgroup, gang.tasks, gang.origin, gang.notes)
    empty = node_states(cluster, empty=True)
    ml = multilevel_of(conf, gang)
    rows = tier_table(
        session_gang,
        conf,
        tree,
        node_states(cluster, empty=False),
        empty,
        multilevel=None if isinstance(ml, str) else ml,
    )
    queue, _ = queue_of(cluster, gang.podgroup)
    static = Cycle(conf, tree, {}, scores=False).static
    traps = [
        *configuration_traps(conf, gang.podgroup),
        *tier_traps(tree, podgroup, gang.podgroup, version),
        *queue_traps(queue, gang.podgroup, cluster.queues, cluster.nodes),
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
        podgroup=podgroup,
        verdict=verdict,
        tiers=rows,
        tree=tree,
        conf=conf,
        traps=list(dict.fromkeys(traps)),
        notes=notes,
        hypernode_source=cluster.hypernode_source,
    )
