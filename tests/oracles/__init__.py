"""Differential oracles: each scheduler's own code run side by side with ``advise``.

``python -m tests.oracles SCHED --n N --seed S`` runs a batch (``scripts/oracle.sh``); each
scheduler's package ``tests.oracles.<sched>`` has ``compare.batch(n, seed, out_dir)``.
"""
