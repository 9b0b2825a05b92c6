#!/usr/bin/env bash
# Checks the crates against deny.toml with cargo-deny (installed from crates.io once per
# version into $EDGE_CACHE_DIR/tools):
#   hack/deny.sh           licences, bans and sources, offline once the crates of
#                          every platform are fetched (`make test`)
#   hack/deny.sh --all     also the advisories, fetching the RustSec database (the
#                          release workflow)
#   hack/deny.sh --tools   only installs cargo-deny
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
root="$EDGE_CACHE_DIR/tools/cargo-deny-$CARGO_DENY_VERSION"
if [ ! -x "$root/bin/cargo-deny" ]; then
  printf '[deny] installing cargo-deny %s (crates.io)\n' "$CARGO_DENY_VERSION" >&2
  cargo install --quiet --locked "cargo-deny@$CARGO_DENY_VERSION" --root "$root" >&2
fi
case "${1:-}" in
  # The crates of every platform of deny.toml's graph, not only those this one builds.
  "")
    cargo fetch --locked --quiet
    exec "$root/bin/cargo-deny" deny --offline check licenses bans sources
    ;;
  --all) exec "$root/bin/cargo-deny" deny check ;;
  --tools) ;;
  *) echo "usage: $0 [--all|--tools]" >&2; exit 2 ;;
esac
