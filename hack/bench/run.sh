#!/usr/bin/env bash
# The benchmark (`make bench`): event search beside DuckDB, the operator at scale, its
# rate discipline and what one tenant leaves of it to another, printed as one table;
# exits non-zero when a target is missed.
#
#   hack/bench/run.sh            full run: release build, then about 40 minutes
#   hack/bench/run.sh --smoke    small run on the dev build that gates counts only (CI)
#   EDGE_BENCH_SUITES=search hack/bench/run.sh     some suites (search, operator, rate, cdn, tenants)
#
# Sizes and durations: see the EDGE_BENCH_* variables in benches/platform/main.rs.
# Installs duckdb (PyPI) into a virtualenv in the cache on first use; starts a local
# control plane of its own and stops it on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"

profile=release
case "${1:-}" in
  --smoke) export EDGE_BENCH_SCALE=smoke; profile=dev ;;
  "") ;;
  *) echo "usage: $0 [--smoke]" >&2; exit 2 ;;
esac
suites="${EDGE_BENCH_SUITES:-search,operator,rate,cdn,tenants}"
# Extra cargo arguments of the build measured (hack/bench/heap-profile.sh drops jemalloc).
read -ra cargo_args <<<"${EDGE_BENCH_CARGO_ARGS:-}"

if [[ ",$suites," == *,search,* ]]; then
  venv="$EDGE_CACHE_DIR/bench-venv"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import duckdb' 2>/dev/null; then
    echo "[bench] installing duckdb into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "duckdb==${DUCKDB_VERSION:-1.5.6}"
  fi
  export EDGE_BENCH_PYTHON="$venv/bin/python"
fi

# The benchmark and the edge-operator it runs, built before anything is measured.
cargo bench --profile "$profile" --locked --bench platform --no-run "${cargo_args[@]}"

if [[ ",$suites," =~ ,(operator|rate|cdn|tenants), ]]; then
  export EDGE_CLUSTER_NAME="bench-$$"
  trap 'hack/cluster.sh down >/dev/null 2>&1 || true' EXIT
  cluster_env="$(hack/cluster.sh up)"
  eval "$cluster_env"
  kubectl apply --server-side -f crds/ >/dev/null
  kubectl wait --for=condition=Established -f crds/ --timeout=60s >/dev/null
  state="${TMPDIR:-/tmp}/edge-operator-$EDGE_CLUSTER_NAME"
  export EDGE_BENCH_AUDIT_LOG="$state/audit.log"
  EDGE_BENCH_ETCD="http://127.0.0.1:$(cat "$state/etcd.port")"
  export EDGE_BENCH_ETCD
fi

EDGE_BENCH_SUITES="$suites" cargo bench --profile "$profile" --locked --bench platform "${cargo_args[@]}"
