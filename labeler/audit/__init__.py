"""The audit: which nodes topology-aware schedulers cannot use.

- facts.py: what is kept of a node (level values, ownership, accelerators); the scope
  (which nodes) is labeler.core.scope, shared with check/generate --from-cluster
- report.py: node states, unusable accelerators, domains (judged by labeler.core.check)
- render.py: the table; store.py + serve.py: the watch-driven exporter (HTTP: labeler.base.http)
- jobview.py: where a job's pods landed, per level (``placement``)
"""
