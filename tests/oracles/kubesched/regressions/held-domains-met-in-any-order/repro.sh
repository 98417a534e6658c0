#!/bin/sh
# Reproduce one scenario: advise's answer, then the real kube-scheduler's (the oracle starts
# a control plane of its own: etcd, kube-apiserver, kube-scheduler and KWOK v1.37.2).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# the repository holding this folder, else the one that wrote it
cd "$(git -C "$here" rev-parse --show-toplevel 2>/dev/null)"
. scripts/venv.sh >/dev/null
topology-labeler advise --from-snapshot "$here/snapshot.yaml" -f "$here/podgroups.yaml"     -o json || echo "(advise exited $?: 3 means some pod stays pending)"
python -m tests.oracles.kubesched.oracle "$here"
