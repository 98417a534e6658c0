"""Scheduler configuration made from a profile and the nodes' positions (``generate``).

- ``kueue``: the Kueue Topology and ResourceFlavor; ``volcano``: the Volcano scheduler's
  and controller's configuration; ``hypernodes``: static Volcano HyperNodes;
  ``configmap``: ``resource-level-config`` merged into a scheduler ConfigMap; ``slurm``:
  ``topology.conf`` and ``topology.yaml``.
- ``bundle``: every output of one set of options, ``kinds`` their names, ``yamlio`` the
  YAML writer; all pure.
- ``sync``: puts the objects into the cluster (ownership, prune).
"""
