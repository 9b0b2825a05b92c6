#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit, emulator, client and e2e tests on a
# real local control plane started for this run and stopped afterwards; `make e2e-kind`
# (the upgrade test, the node suite and the README's kind recipe on kind, with a Docker
# engine it starts and stops, as root); then a smoke run of the benchmark.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"

step() { printf '\n==> %s\n' "$*"; }

# Argo CD runs its health checks in a Lua 5.1 interpreter; the tests run ours in one.
hack/install-packages.sh lua5.1 shellcheck

step "shellcheck: the scripts of hack/ and .ci/ (no status masked, see .shellcheckrc)"
listed="$(grep -rlE '^#!/usr/bin/env bash' hack .ci)"
mapfile -t scripts <<<"$listed"
for script in "${scripts[@]}"; do
  grep -q '^set -euo pipefail$' "$script" || { echo "$script: lacks 'set -euo pipefail'" >&2; exit 1; }
done
shellcheck "${scripts[@]}"

step "cargo fmt --check"
cargo fmt --check
step "cargo clippy --all-targets -- -D warnings (and the node and upgrade suites)"
cargo clippy --all-targets --locked -- -D warnings
cargo clippy --test node --test upgrade --locked -- -D warnings

step "edge-sim parity with the platform's published answers (tests/recordings/published)"
cargo run --quiet --locked --bin edge-sim -- parity tests/recordings/published

step "the control plane and the tools the tests run (hack/k8s/build.sh --tools)"
hack/k8s/build.sh --tools >/dev/null

step "actionlint: the release workflow (.github/workflows)"
"$K8S_BIN_DIR/actionlint" -no-color

step "local control plane"
export EDGE_CLUSTER_NAME="test-$$"
trap 'hack/cluster.sh down >/dev/null 2>&1 || true' EXIT
cluster_env="$(hack/cluster.sh up)"
eval "$cluster_env"
export EDGE_TEST_KUBECONFIG="$KUBECONFIG"

step "cargo test"
cargo test --locked --no-fail-fast --lib --bins --tests
hack/cluster.sh down >/dev/null

step "make e2e-kind (hack/e2e-kind.sh)"
trap - EXIT
hack/e2e-kind.sh

step "benchmark smoke (small sizes, count targets gated; the full run is make bench)"
hack/bench/run.sh --smoke
