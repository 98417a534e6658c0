"""The per-node agent: read where this node sits, keep its topology labels.

- ``decide``: pure decisions (a source reading → the labels wanted on this node).
- ``loop``: the running agent (source thread, watch of its own node, writes, probes).
"""
