"""The audit: which nodes topology-aware schedulers cannot use.

- facts.py: what is kept of a node (level values, ownership, accelerators); the scope
  (which nodes) is labeler.core.scope, shared with check/generate --from-cluster
- report.py: node states, unusable accelerators, domains (judged by labeler.core.check)
- render.py: the table; store.py + serve.py: the watch-driven exporter (HTTP: labeler.base.http),
  each of its watches one LIST + WATCH loop (listwatch.py): nodes, DRA slices (slices.py) and
  Kueue's Workloads for the hot-swap view (kueue_watch.py, hotswap.py)
- jobview.py: where a job's pods landed, per level (``placement``)
"""
