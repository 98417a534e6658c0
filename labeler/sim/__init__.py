"""Pure simulators of the topology-aware schedulers (``advise``, ``domains``, the hot-swap
view), one package per scheduler, each answering as that scheduler's code does:

- ``kueue``: Kueue's Topology-Aware Scheduling (a Workload's PodSets on the flavors its
  queues offer, node failures and their replacements, the hot-swap view).
- ``volcano``: one cycle of Volcano's scheduler for a Volcano Job or PodGroup.
- ``kubesched``: kube-scheduler's own pod-group cycle for PodGroups and
  CompositePodGroups.
- ``common``: what all three read the same way: nodes, pods and their requests, taints
  and tolerations, node affinity, snapshot files and the cluster (``inputs``, the only
  I/O).

No simulator imports another; each imports only ``common``, ``labeler.core`` and
``labeler.base`` (the contracts in ``.importlinter``).
"""
