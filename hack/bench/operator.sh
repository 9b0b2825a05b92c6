#!/usr/bin/env bash
# Operator benchmark at scale (convergence, floor, calls and status writes per object,
# memory) on a local control plane of its own.
#   EDGE_BENCH_OBJECTS=200 hack/bench/operator.sh   # a smaller run
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"
export EDGE_CLUSTER_NAME="bench-$$"
cargo build --release --locked --bin edge-operator
trap 'hack/cluster.sh down >/dev/null 2>&1 || true' EXIT
eval "$(hack/cluster.sh up)"
kubectl apply --server-side -f crds/ >/dev/null
kubectl wait --for=condition=Established -f crds/ --timeout=60s >/dev/null
EDGE_BENCH_OPERATOR="$CARGO_TARGET_DIR/release/edge-operator" \
EDGE_BENCH_AUDIT_LOG="${TMPDIR:-/tmp}/edge-operator-$EDGE_CLUSTER_NAME/audit.log" \
  cargo bench --locked --bench operator
