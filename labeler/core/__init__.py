"""The pure model and its rules. Imports only :mod:`labeler.base`; no I/O beyond reading
a named input file.

- ``labels``, ``selector``, ``quantity``: Kubernetes' label, selector and quantity rules.
- ``model``, ``profiles``: topologies (levels, widest first) and the named profiles.
- ``node``, ``plan``: a node as read, and the label diff one writer makes on it.
- ``positions``, ``sheet``, ``check``: where nodes sit (the planning sheet or the labels)
  and whether that is usable.
- ``scope``, ``states``: which nodes are looked at, and each one's state.
- ``capacity``, ``dra``: what a node holds, its allocatable and its DRA devices.
- ``slinky``: Slurm's switch names and the Slinky node annotation.
- ``overlay``, ``hotswap``: what the simulators hand the map and the audit (a placement;
  the domain Kueue searches for a failed node's replacement).
"""
