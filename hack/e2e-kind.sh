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

current_step=
step_start=$SECONDS
step() { current_step="$*"; printf '\n==> %s\n' "$*"; step_start=$SECONDS; }
took() { printf '==> %s: %ss\n' "$1" "$((SECONDS - step_start))"; }
# Each step's commands are plain statements and assignments, whose failures `set -e`
# sees: the run ends at the failing step, named here.
trap 'printf "==> FAILED: %s (exit %s)\n" "$current_step" "$?" >&2' ERR

teardown() {
  kind delete cluster --name "$cluster" >/dev/null 2>&1 || true
  kind delete cluster --name edge >/dev/null 2>&1 || true
  hack/kind/docker.sh down
  rm -rf "$work"
}
trap teardown EXIT

# kind falls back to pulling kindest/node from a public registry, which these machines
# cannot reach: a cluster is created only from the node image built here.
require_node_image() {
  if ! docker image inspect "$KIND_NODE_IMAGE" >/dev/null 2>&1; then
    printf '==> error: the node image %s is not in the Docker engine (hack/kind/build.sh builds it); not creating a cluster, which would pull kind'"'"'s default image from a public registry\n' \
      "$KIND_NODE_IMAGE" >&2
    exit 1
  fi
}

step "tools: kubectl, helm, kstatus, promtool (hack/k8s/build.sh)"
tools="$(hack/k8s/build.sh)"
export PATH="${tools##*$'\n'}:$KIND_DIR/bin:$PATH"
step "Docker engine"
docker_env="$(hack/kind/docker.sh up)"
eval "$docker_env"
took "docker up"
step "kind node image (hack/kind/build.sh)"
node_image="$(hack/kind/build.sh)"
KIND_NODE_IMAGE="${node_image##*$'\n'}"
export KIND_NODE_IMAGE
took "node image"
step "images (hack/image/build.sh, and the previous release's operator)"
current="$(hack/image/build.sh)"
previous="$(hack/image/build.sh previous)"
mapfile -t images <<<"$current"$'\n'"$previous"

step "kind create cluster --name $cluster"
require_node_image
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
  kubectl get -n edge deployments,pods,leases,edgeplatform -o wide || true
  kubectl get -n edge edgeplatform -o yaml || true
  kubectl logs -n edge deployment/edge-edge-operator --tail=200 || true
  kubectl logs -n edge deployment/edge-edge-operator-emulator --tail=50 || true
  kubectl get events -n edge --sort-by=.lastTimestamp || true
}
require_node_image
bash -euxo pipefail "$work/recipe.sh" || { recipe_diagnosis; exit 1; }
took "README recipe"
