"""Pure simulators of topology-aware schedulers (``advise``, ``domains``, the hot-swap view).

Kueue's Topology-Aware Scheduling, the package's own modules:

- ``cluster``, ``kubeyaml``: nodes, pod requests, usage, taints; snapshot files, read fast.
- ``tree``: the flavor's domain tree, nodes left out, free pod slots per node.
- ``assign``, ``place``, ``balanced``: one PodSet's placement (``tas_flavor_snapshot.go``,
  KEP-2724; ``TASBalancedPlacement``); ``affinity``: required node affinity.
- ``workload``, ``admit``, ``queues``, ``usage``: a Workload's PodSets, placed in order,
  on the flavors its queues offer, after what admitted Workloads hold.
- ``admitted``, ``replace``, ``failure``: an admitted Workload's failed nodes and Kueue's
  search for their replacements; ``hotswap``: that search for every node, for ``audit``.
- ``gates``: the modelled Kueue's feature gates.
- ``advice``, ``inventory``, ``multilevel``: narrowest fitting level, annotations,
  per-domain counts, Ascend's ``affinity-config``; ``dra``: what is said about DRA.
- ``report``, ``workload_report``, ``failure_report``, ``overlay``: text, JSON and the map.
- ``inputs``: the only I/O: a snapshot file, or the cluster through ``labeler.kube``.

``volcano/`` is Volcano's scheduler and ``kubesched/`` kube-scheduler's pod-group cycle,
each a package of its own. Quantities are parsed by ``labeler.core.quantity``.
"""
