"""The audit: which nodes topology-aware schedulers cannot use.

What a node's facts and state are (and which nodes are in scope) is the pure model's
(``labeler.core.states``, ``labeler.core.scope``), shared with ``check`` and the map.

- ``render``: the one-shot audit's table.
- ``serve``: the watch-driven exporter (HTTP: ``labeler.base.http``), its state kept
  incrementally in ``store``; each of its watches is one LIST + WATCH loop
  (``listwatch``): nodes, each DRA driver's ResourceSlices (``slices``), and Kueue's
  Workloads for the hot-swap view (``kueue_watch``, recomputed by ``hotswap`` with the
  simulation the command hands in).
- ``jobview``: where a job's pods landed, per level (``placement``).
"""
