#!/usr/bin/env bash
# Differential oracle for one scheduler: scripts/oracle.sh SCHED [--n N] [--seed S] [--keep DIR]
# Builds the oracle if needed (tests/oracles/SCHED/), then runs a batch of generated
# scenarios through both advise and the oracle; prints every disagreement with a folder
# that reproduces it and ends with "oracle SCHED: A agree, D disagree" (exit 1 if D > 0).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/oracle.sh SCHED [--n N] [--seed S] [--keep DIR]" >&2; exit 2; }
. scripts/venv.sh
exec python -m tests.oracles "$@"
