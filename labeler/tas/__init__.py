"""Pure simulator of Kueue Topology-Aware Scheduling placement (``advise``, ``domains``).

- ``cluster``: nodes, pod requests, usage, taints/tolerations, snapshot files.
- ``tree``: the flavor's domain tree, nodes left out, free pod slots per node.
- ``assign``: Kueue's placement algorithm (``tas_flavor_snapshot.go``, KEP-2724).
- ``advice`` / ``inventory``: narrowest fitting level, annotations, per-domain counts.
- ``report``: text and JSON rendering.
- ``inputs``: the only I/O: a snapshot file, or the cluster through ``labeler.kube``.

Quantities are parsed by ``labeler.core.quantity``.
"""
