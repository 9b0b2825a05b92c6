#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit, emulator, client and e2e tests on a
# real local control plane started for this run and stopped afterwards; the upgrade
# test and the node suite (the chart's Pods from the locally assembled images) on a
# control plane with a kubelet node, which needs root; then a smoke run of the benchmark.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"

step() { printf '\n==> %s\n' "$*"; }

# Argo CD runs its health checks in a Lua 5.1 interpreter; the tests run ours in one.
if ! command -v lua5.1 >/dev/null; then
  step "installing lua5.1 (Debian)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lua5.1 >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lua5.1 >/dev/null; }
fi

step "cargo fmt --check"
cargo fmt --check
step "cargo clippy --all-targets -- -D warnings (and the node and upgrade suites)"
cargo clippy --all-targets --locked -- -D warnings
cargo clippy --test node --test upgrade --locked -- -D warnings

step "local control plane"
export EDGE_CLUSTER_NAME="test-$$"
trap 'hack/cluster.sh down >/dev/null 2>&1 || true' EXIT
eval "$(hack/cluster.sh up)"
export EDGE_TEST_KUBECONFIG="$KUBECONFIG"

step "cargo test"
cargo test --locked --no-fail-fast --lib --bins --tests
hack/cluster.sh down >/dev/null

step "images (hack/image/build.sh: OCI archives of the release binaries, and the previous release's operator)"
built="$(hack/image/build.sh)"$'\n'"$(hack/image/build.sh previous)"
mapfile -t images <<<"$built"
ls -l "${images[@]}"

step "upgrade and node suites: a kubelet node, the images loaded, the chart installed (root)"
export EDGE_CLUSTER_NAME="node-$$"
trap 'hack/cluster.sh down >/dev/null 2>&1 || true' EXIT
eval "$(hack/cluster.sh up --node)"
for image in "${images[@]}"; do
  [[ "$image" == */pause.oci.tar ]] || hack/cluster.sh load-image "$image"
done
# The upgrade test replaces the CRDs with the previous release's: it runs first, alone.
EDGE_TEST_KUBECONFIG="$KUBECONFIG" cargo test --locked --test upgrade -- --nocapture
EDGE_TEST_KUBECONFIG="$KUBECONFIG" cargo test --locked --test node -- --nocapture
hack/cluster.sh down >/dev/null
trap - EXIT

step "benchmark smoke (small sizes, count targets gated; the full run is make bench)"
hack/bench/run.sh --smoke
