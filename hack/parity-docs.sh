#!/usr/bin/env bash
# Writes the parity report of tests/recordings/published into docs/emulator.md, between
# its parity markers.
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"
cargo build --quiet --bin edge-sim
table=$(mktemp)
trap 'rm -f "$table"' EXIT
"$CARGO_TARGET_DIR/debug/edge-sim" parity --format markdown tests/recordings/published > "$table"
awk -v table="$table" '
  /<!-- parity:begin -->/ { print; while ((getline line < table) > 0) print line; skipping = 1; next }
  /<!-- parity:end -->/ { skipping = 0 }
  !skipping { print }
' docs/emulator.md > docs/emulator.md.new
mv docs/emulator.md.new docs/emulator.md
