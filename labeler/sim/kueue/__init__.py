"""Simulator of Kueue's Topology-Aware Scheduling (``advise``, ``domains``, the hot-swap
view). Pure: the command reads the snapshot or the cluster (``labeler.sim.common.inputs``)
and hands the objects in. The modules:

- ``tree``: the flavor's domain tree, nodes left out, free pod slots per node.
- ``assign``, ``place``, ``balanced``: one PodSet's placement (``tas_flavor_snapshot.go``,
  KEP-2724; ``TASBalancedPlacement``).
- ``workload``, ``admit``, ``queues``, ``usage``: a Workload's PodSets, placed in order,
  on the flavors its queues offer, after what admitted Workloads hold.
- ``admitted``, ``replace``, ``failure``: an admitted Workload's failed nodes and Kueue's
  search for their replacements; ``hotswap``: that search for every node, for ``audit``.
- ``gates``: the modelled Kueue's feature gates.
- ``advice``, ``inventory``, ``multilevel``: narrowest fitting level, annotations,
  per-domain counts, Ascend's ``affinity-config``; ``dra``: what is said about DRA.
- ``report``, ``workload_report``, ``failure_report``, ``overlay``: text, JSON and the map.

Nodes, pods, tolerations and node affinity are ``labeler.sim.common``'s; quantities are
parsed by ``labeler.core.quantity``.
"""
