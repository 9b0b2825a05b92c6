#!/usr/bin/env bash
# `make e2e-kind`: the Pod-level suites on kind, and the README's kind recipe as written.
#   1. a Docker engine (hack/kind/docker.sh: started when none answers, stopped after)
#   2. kind and its node image of the pinned Kubernetes version (hack/kind/build.sh)
#   3. a cluster from that image; the image archives of hack/image/build.sh loaded with
#      `kind load image-archive`; the upgrade test (tests/upgrade), then the node suite
#      (tests/node); the cluster deleted
#   4. the README's "Test your manifests on kind" block, run verbatim in the repository
#      root with KIND_NODE_IMAGE set (it creates and deletes its own cluster)
# Needs root when it starts Docker or builds the node image. Each step prints its time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"
cluster="${EDGE_KIND_CLUSTER:-edge-operator-e2e}"
work="$(mktemp -d)"
export KUBECONFIG="$work/kubeconfig"

step_start=$SECONDS
step() { printf '\n==> %s\n' "$*"; step_start=$SECONDS; }
took() { printf '==> %s: %ss\n' "$1" "$((SECONDS - step_start))"; }

teardown() {
  kind delete cluster --name "$cluster" >/dev/null 2>&1 || true
  kind delete cluster --name edge >/dev/null 2>&1 || true
  hack/kind/docker.sh down
  rm -rf "$work"
}
trap teardown EXIT

step "tools: kubectl, helm, kstatus, promtool (hack/k8s/build.sh)"
export PATH="$(hack/k8s/build.sh | tail -n1):$KIND_DIR/bin:$PATH"
step "Docker engine"
eval "$(hack/kind/docker.sh up)"
took "docker up"
step "kind node image (hack/kind/build.sh)"
export KIND_NODE_IMAGE="$(hack/kind/build.sh | tail -n1)"
took "node image"
step "images (hack/image/build.sh, and the previous release's operator)"
built="$(hack/image/build.sh)"$'\n'"$(hack/image/build.sh previous)"
mapfile -t images <<<"$built"

step "kind create cluster --name $cluster"
kind create cluster --name "$cluster" --image "$KIND_NODE_IMAGE" --wait 120s
took "cluster create"
step "kind load image-archive"
for image in "${images[@]}"; do
  kind load image-archive --name "$cluster" "$image"
done
took "image load"
step "upgrade test and node suite"
# The upgrade test replaces the CRDs with the previous release's: it runs first, alone.
EDGE_TEST_KUBECONFIG="$KUBECONFIG" cargo test --locked --test upgrade -- --nocapture
EDGE_TEST_KUBECONFIG="$KUBECONFIG" cargo test --locked --test node -- --nocapture
took "suites"
kind delete cluster --name "$cluster"

step "README: Test your manifests on kind"
awk '/^<!-- recipe: kind -->$/ { found = 1; next } found && /^```sh$/ { block = 1; next } block && /^```$/ { exit } block' \
  README.md >"$work/recipe.sh"
[ -s "$work/recipe.sh" ] || { echo "README.md has no block after <!-- recipe: kind -->" >&2; exit 1; }
# On failure the recipe's cluster is still there (its last line deletes it): show why.
recipe_diagnosis() {
  kubectl get -n edge deployments,pods,leases,accesslistconfigs,pullzonecertificates,containerappwatches -o wide || true
  kubectl get -n edge accesslistconfigs,pullzonecertificates,containerappwatches -o yaml || true
  kubectl logs -n edge deployment/edge-edge-operator --tail=200 || true
  kubectl logs -n edge deployment/edge-edge-operator-emulator --tail=50 || true
  kubectl get events -n edge --sort-by=.lastTimestamp || true
}
bash -euxo pipefail "$work/recipe.sh" || { recipe_diagnosis; exit 1; }
took "README recipe"
