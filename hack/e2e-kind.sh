#!/usr/bin/env bash
# `make e2e-kind`: the upgrade and node suites (tests/upgrade, tests/node) on a kind cluster, for machines with
# Docker and kind. Creates the cluster (EDGE_KIND_CLUSTER, default edge-operator-e2e),
# loads the image archives of hack/image/build.sh, runs the suite, and deletes the
# cluster unless EDGE_KIND_KEEP=1. Where Docker is absent, `make test` runs the same
# suite on `hack/cluster.sh up --node`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"
cluster="${EDGE_KIND_CLUSTER:-edge-operator-e2e}"

for tool in docker kind; do
  if ! command -v "$tool" >/dev/null; then
    echo "make e2e-kind needs $tool on PATH (https://kind.sigs.k8s.io/); without Docker, run 'make test', whose node suite uses hack/cluster.sh up --node" >&2
    exit 1
  fi
done
# kubectl and helm of the pinned versions.
hack/k8s/build.sh >/dev/null

built="$(hack/image/build.sh)"$'\n'"$(hack/image/build.sh previous)"
mapfile -t images <<<"$built"
if ! kind get clusters 2>/dev/null | grep -qx "$cluster"; then
  kind create cluster --name "$cluster" --wait 120s
  [ "${EDGE_KIND_KEEP:-0}" = 1 ] || trap 'kind delete cluster --name "$cluster"' EXIT
fi
for image in "${images[@]}"; do
  [[ "$image" == */pause.oci.tar ]] || kind load image-archive --name "$cluster" "$image"
done
kubeconfig="$(mktemp)"
kind get kubeconfig --name "$cluster" >"$kubeconfig"
# The upgrade test replaces the CRDs with the previous release's: it runs first, alone.
EDGE_TEST_KUBECONFIG="$kubeconfig" PATH="$K8S_BIN_DIR:$PATH" cargo test --locked --test upgrade -- --nocapture
EDGE_TEST_KUBECONFIG="$kubeconfig" PATH="$K8S_BIN_DIR:$PATH" cargo test --locked --test node -- --nocapture
