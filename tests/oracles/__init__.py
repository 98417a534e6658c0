"""Differential oracles: each scheduler's own code run beside ``advise`` on generated
scenarios (``scripts/oracle.sh SCHED``); ``tests.oracles.<sched>.compare.batch(n, seed,
out_dir)`` runs one batch."""
