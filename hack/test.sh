#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit, emulator, client and e2e tests on a
# real local control plane started for this run and stopped afterwards; a smoke run of
# the benchmark; then `make e2e-kind` (the upgrade test, the node suite and the README's
# kind recipe on kind, with a Docker engine it starts and stops, as root).
#
# The Go builds (the tools the tests run, the kind node's binaries), cargo-deny and the
# release's tools (hack/image/tools.sh) run in the background from the start, at a low CPU priority (nice 10 for the tools the
# tests need first, 19 for the rest): they take the cores the Rust builds leave idle and
# the time the suites wait. A step that needs one waits for it; its log is printed then
# (or its end, when it failed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"

# Each step prints the minutes and seconds since the start.
step() { printf '\n==> [%dm%02ds] %s\n' "$((SECONDS / 60))" "$((SECONDS % 60))" "$*"; }

logs="$(mktemp -d)"
declare -A background_pids=() background_commands=()
cluster_up=false
cleanup() {
  if $cluster_up; then hack/cluster.sh down >/dev/null 2>&1 || true; fi
  # Each background job leads a process group of its own: stop the whole group.
  for pid in "${background_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap cleanup EXIT
# background NAME NICENESS COMMAND...: starts COMMAND at that CPU priority, its output in
# a log, in a process group of its own (job control) but in this session: the kernel
# weighs niceness only within a session (autogroups), and gives a new session an equal
# share of the CPU whatever its niceness.
background() {
  local name="$1" niceness="$2"; shift 2
  set -m
  nice -n "$niceness" "$@" >"$logs/$name.log" 2>&1 &
  set +m
  background_pids[$name]=$!
  background_commands[$name]="$*"
}
# await NAME: waits for a background job and prints its log; stops the run when it failed.
await() {
  local name="$1" status=0
  step "$name: waiting for ${background_commands[$name]} (in the background since the start)"
  wait "${background_pids[$name]}" || status=$?
  unset "background_pids[$name]"
  if [ "$status" != 0 ]; then
    printf '==> FAILED: %s (exit %s); its log ends:\n' "$name" "$status" >&2
    tail -n 40 "$logs/$name.log" >&2
    exit 1
  fi
  cat "$logs/$name.log"
}

# Argo CD runs its health checks in a Lua 5.1 interpreter; the tests run ours in one.
hack/install-packages.sh lua5.1 shellcheck

# The tools come first: the tests need them. The node's binaries (kind's step 1) and
# the release's tools are needed only by `make e2e-kind`.
background tools 10 hack/k8s/build.sh --tools
background node-binaries 19 hack/kind/build.sh --binaries
background release-tools 19 hack/release.sh --tools
background deny-tool 10 hack/deny.sh --tools

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
step "cargo doc: the documentation built, every link resolved"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked

await deny-tool
step "cargo deny: the crates' licences, bans and sources (deny.toml)"
hack/deny.sh

step "edge-sim parity with the platform's published answers (tests/recordings/published)"
cargo run --quiet --locked --bin edge-sim -- parity tests/recordings/published

step "cargo test --no-run: the unit and e2e tests built (the tools build meanwhile)"
cargo test --locked --no-run --lib --bins --tests

await tools

step "actionlint: the release workflow (.github/workflows)"
"$K8S_BIN_DIR/actionlint" -no-color

step "local control plane"
export EDGE_CLUSTER_NAME="test-$$"
cluster_up=true
cluster_env="$(hack/cluster.sh up)"
eval "$cluster_env"
export EDGE_TEST_KUBECONFIG="$KUBECONFIG"

step "cargo test"
cargo test --locked --no-fail-fast --lib --bins --tests
hack/cluster.sh down >/dev/null
cluster_up=false
unset KUBECONFIG EDGE_TEST_KUBECONFIG EDGE_CLUSTER_NAME

step "benchmark smoke (small sizes, count targets gated; the full run is make bench)"
hack/bench/run.sh --smoke

await node-binaries
await release-tools
step "make e2e-kind (hack/e2e-kind.sh)"
hack/e2e-kind.sh
step "done"
