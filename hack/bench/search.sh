#!/usr/bin/env bash
# Event-search benchmark: edge-sim's engine and DuckDB on the same 1M events.
# Installs duckdb (PyPI) into a virtualenv in the cache on first use.
#   EDGE_BENCH_EVENTS=100000 hack/bench/search.sh   # a smaller run
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"
venv="$EDGE_CACHE_DIR/bench-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import duckdb' 2>/dev/null; then
  echo "[bench] installing duckdb into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "duckdb==${DUCKDB_VERSION:-1.5.6}"
fi
EDGE_BENCH_PYTHON="$venv/bin/python" cargo bench --locked --bench search
