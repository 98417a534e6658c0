#!/usr/bin/env bash
# Run advise side by side with a scheduler's own code on generated scenarios.
#
#   scripts/oracle.sh SCHED [--n N] [--seed S] [--keep DIR]     SCHED: kueue, volcano, kubesched
#
# Builds the scheduler's oracle (a Go program, tests/oracles/SCHED/go) into the git-ignored
# .cache/oracles/ if needed, then prints each disagreement with the folder that reproduces it
# and ends with "oracle SCHED: A agree, D disagree" (exit 1 when D > 0).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
exec "$PY" -m tests.oracles "$@"
