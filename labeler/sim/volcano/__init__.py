"""Simulator of Volcano's scheduler (``advise`` for Volcano Jobs and PodGroups).

Pure, like the Kueue simulator beside it: the command reads the snapshot or the cluster and
hands the objects in. The rules follow Volcano's code (volcano-sh/volcano v1.15.0, the
``allocate``/``enqueue`` actions and the gang, predicates, proportion, capacity,
overcommit, binpack, nodeorder and network-topology-aware plugins); docs/compatibility.md
lists what is modelled and what is not. The modules, in the order a question flows:

- ``snapshot``: a snapshot's (or the cluster's) objects sorted by kind and API group.
- ``resources``: Volcano's resource arithmetic (which dimensions count, and how).
- ``model``: PodGroups, Pods (tasks), Queues read from Kubernetes objects.
- ``jobs``: a Volcano Job expanded as the job controller does, checked as admission does.
- ``hypernodes``: the HyperNode tree, with the virtual cluster-top HyperNode.
- ``conf``: the scheduler configuration (actions, tiers, plugins, arguments).
- ``predicates``, ``scoring``: node filters and node/HyperNode scores.
- ``session``: the job, its sub-jobs and the nodes as one scheduling cycle sees them.
- ``cycle``: the plugins called tier by tier, as the session calls them.
- ``queues``: enqueue and the queue's share (proportion, capacity, overcommit).
- ``allocate``: the allocate action for one job; ``ascend``: ascend-for-volcano's
  multi-level placement; ``messages``: what Volcano writes on the PodGroup.
- ``simulate``: one cycle for the advised gang (session adjustments, enqueue, allocate).
- ``tiers``, ``traps``: the per-tier table of copies, and the traps in plain words.
- ``advice``, ``report``, ``overlay``: the answer, its text and JSON, the map overlay.
"""

# The Volcano release the simulator is checked against: the differential oracle
# (tests/oracles/volcano) runs this release's own scheduler, and a test keeps the two equal.
VOLCANO_VERSION = "v1.15.0"
