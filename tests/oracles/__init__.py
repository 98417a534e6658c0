"""Differential oracles: each scheduler's own code, run beside ``advise`` on generated
scenarios (``scripts/oracle.sh SCHED``)."""
