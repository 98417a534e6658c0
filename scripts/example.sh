#!/usr/bin/env bash
# The main job on the bundled example, no cluster needed: a fake API server (the one the
# tests use) stands in for a 13-node GPU cluster; the example CSV labels 12 of its nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
out=out/example
rm -rf "$out"; mkdir -p "$out"
kc="$out/kubeconfig"
csv=examples/oci-cluster.csv

# gpu-00 is a node nobody planned for: the audit will find it.
python -m tests.fakekube --nodes 1 --name-fmt 'gpu-{:02d}' --nodes-from-csv "$csv" \
    --allocatable nvidia.com/gpu=8 --kubeconfig-out "$kc" >"$out/fake.url" &
fake=$!
trap 'kill $fake 2>/dev/null; wait $fake 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$kc" ] && break; sleep 0.1; done

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }
tl() { step topology-labeler "$@" --kubeconfig "$kc"; }

tl plan  --config-path "$csv"
tl apply --config-path "$csv"
tl apply --config-path "$csv"                      # a re-run writes nothing
tl audit --profile oci-rdma || echo "(audit exits 3: a node is not fully labeled)"
tl check --profile oci-rdma --from-cluster || echo "(check exits 3: gpu-00 has no labels)"
tl check --profile oci-rdma --from-csv "$csv"
# --force: gpu-00 is still unlabeled; the objects cover the 12 labeled nodes.
tl generate --profile oci-rdma --from-cluster --output-dir "$out/scheduler" \
    --flavor-node-label node.kubernetes.io/instance-type=BM.GPU.H100.8 --force
step ls -R "$out/scheduler"
step sed -n '1,40p' "$out/scheduler/kueue-topology.yaml"
tl advise --profile oci-rdma --from-cluster --pods 3 --request nvidia.com/gpu=8 \
    --required local_block
rc=0
tl advise --profile oci-rdma --from-cluster --pods 4 --request nvidia.com/gpu=8 \
    --required local_block --html "$out/advise-map.html" || rc=$?
if [ "$rc" -ne 3 ]; then
    echo "error: advise exited $rc; expected 3 (done: the job does not fit)" >&2
    exit 1
fi
echo "(advise exits 3: done, and the job does not fit)"
# Volcano, from a snapshot file (no cluster): a CPU coordinator and four GPU workers in one
# gang, hard mode within one rack; Volcano's own rules say why it stays pending.
rc=0
step topology-labeler advise -f examples/volcano-job.yaml \
    --from-snapshot examples/snapshot-volcano.yaml || rc=$?
if [ "$rc" -ne 3 ]; then
    echo "error: advise exited $rc; expected 3 (done: the gang does not fit)" >&2
    exit 1
fi
echo "(advise exits 3: the coordinator's CPU nodes are in no rack, so no rack holds the gang)"
tl map --profile oci-rdma --from-cluster -o "$out/topology-map.html"
printf '\nDone. Generated scheduler configuration is in %s/scheduler/\n' "$out"
printf 'Topology map (open in a browser): %s\n' "$(realpath "$out/topology-map.html")"
printf 'The same map with the advised placement: %s\n' "$(realpath "$out/advise-map.html")"
