#!/usr/bin/env bash
# The operator's peak heap by structure at N objects (default 10,000): the operator
# suite of the benchmark with the operator under heaptrack (Debian's package, installed
# when missing) and the system allocator (heaptrack does not follow jemalloc's), then
# one table per operator process (the convergence run first, then the start-up).
#
#   hack/bench/heap-profile.sh [OBJECTS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
objects="${1:-10000}"
hack/install-packages.sh heaptrack
out="$(mktemp -d)"
# The wrapper execs the operator, so the benchmark still watches the operator's own pid.
cat >"$out/wrap" <<WRAP
#!/bin/sh
DUMP_HEAPTRACK_OUTPUT="$out/operator.\$\$.raw" LD_PRELOAD=/usr/lib/heaptrack/libheaptrack_preload.so exec "\$@"
WRAP
chmod +x "$out/wrap"
# Times and memory under heaptrack miss the benchmark's targets; only the profiles count.
EDGE_BENCH_SUITES=operator EDGE_BENCH_OBJECTS="$objects" EDGE_BENCH_LARGE_OBJECTS=0 \
  EDGE_BENCH_IDLE=20s EDGE_BENCH_RESYNC=10s EDGE_BENCH_OPERATOR_WRAPPER="$out/wrap" \
  EDGE_BENCH_CARGO_ARGS=--no-default-features \
  hack/bench/run.sh || true
shopt -s nullglob
raws=("$out"/operator.*.raw)
[ "${#raws[@]}" -gt 0 ] || { echo "no profile in $out: the benchmark started no operator (see above)" >&2; exit 1; }
for raw in "${raws[@]}"; do
  /usr/lib/heaptrack/libexec/heaptrack_interpret <"$raw" | gzip >"${raw%.raw}.gz"
  heaptrack_print -f "${raw%.raw}.gz" --print-peaks 0 --print-allocators 0 --print-temporary 0 \
    --flamegraph-cost-type peak -F "${raw%.raw}.stacks" | grep -E '^peak (heap|RSS)'
  python3 hack/bench/heap_breakdown.py "${raw%.raw}.stacks" "$objects"
done
echo "profiles in $out"
