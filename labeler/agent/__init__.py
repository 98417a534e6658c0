"""The per-node agent: read where this node sits, keep its topology labels.

- ``decide``: pure decisions (a source reading → the labels wanted on this node).
- ``confirm``: a change of topology is written only once enough reads agree (pure).
- ``reconcile``: one step (outcome → at most one patch), and ``AgentConfig``.
- ``gate``: the readiness gate (the startup taint, the TopologyLabeled condition).
- ``events``: what the agent reports (Kubernetes Events, log lines, conflicts, unknown
  labels).
- ``health``: each thread's heartbeat, for ``/healthz``.
- ``loop``: the running agent (source thread, watch of its own node, the loop, probes).
"""
