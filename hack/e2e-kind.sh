#!/usr/bin/env bash
# `make e2e-kind`: the Pod-level suites on kind, and the README's kind recipe as written.
#   1. a Docker engine (hack/kind/docker.sh: started when none answers, stopped after)
#   2. kind and its node image of the pinned Kubernetes version (hack/kind/build.sh)
#   3. the previous release's image and a release folder (hack/release.sh, dev binaries);
#      a cluster from the node image; the folder's image archives loaded with `kind load
#      image-archive`; the upgrade test (tests/upgrade), then the node suite (tests/node,
#      which installs the folder's chart too); the cluster deleted
#   4. the README's "Test your manifests on kind" block, run verbatim in the repository
#      root with KIND_NODE_IMAGE set (it creates and deletes its own cluster)
#   5. the README's Install and first-object blocks, run verbatim on a cluster of their
#      own against a stand-in for a real account: edge-sim serving https with a private
#      CA on the node's address (a NodePort), the CA given as EDGE_CA_FILE
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

install_cluster="${cluster}-install"
teardown() {
  kind delete cluster --name "$cluster" >/dev/null 2>&1 || true
  kind delete cluster --name edge >/dev/null 2>&1 || true
  kind delete cluster --name "$install_cluster" >/dev/null 2>&1 || true
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

step "tools: kubectl, helm, kstatus, promtool (hack/k8s/build.sh --tools)"
tools="$(hack/k8s/build.sh --tools)"
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
step "the previous release's operator and the release folder (hack/release.sh --profile dev)"
# The suites test behaviour: the images hold the dev binaries `cargo test` built (the
# README's `make images` below follows this too); `make release` builds release ones.
# The node suite installs the chart of this folder, with its images.
export EDGE_IMAGE_PROFILE="${EDGE_IMAGE_PROFILE:-dev}"
# The previous release's operator first: it is built in the same target directory, and
# the release folder's build then links this version's binaries back.
previous="$(hack/image/build.sh previous)"
release_dir="$(hack/release.sh --profile "$EDGE_IMAGE_PROFILE" --platforms linux/amd64,linux/arm64 --out "$work/release" | tail -n1)"
# shellcheck source=hack/image/tools.sh
source hack/image/tools.sh
release_tools
# The node suite checks the folder's SBOMs with the schema check hack/release.sh ran.
export EDGE_TEST_RELEASE_DIR="$release_dir" EDGE_RELEASE_PYTHON="$RELEASE_PYTHON"
images=("$release_dir"/*.oci.tar "$previous")
took "release folder"

# load_images CLUSTER: the images into every node of the cluster, as a registry would
# serve them: `kind load` names an image by its tag; a pull by digest (the release's
# chart pins its images so) names it by its digest too, which `ctr images tag` adds.
load_images() {
  local image reference name digest node nodes
  nodes="$(kind get nodes --name "$1")"
  for image in "${images[@]}"; do
    kind load image-archive --name "$1" "$image"
    reference="$(python3 hack/image/oci.py --reference "$image")"
    read -r name digest <<<"$reference"
    for node in $nodes; do
      docker exec "$node" ctr -n k8s.io images tag --force "$name" "${name%:*}@$digest" >/dev/null
    done
  done
}

step "kind create cluster --name $cluster"
require_node_image
kind create cluster --name "$cluster" --image "$KIND_NODE_IMAGE" --config hack/kind/suites-cluster.yaml --wait 120s
took "cluster create"
step "kind load image-archive"
load_images "$cluster"
took "image load"
step "upgrade test and node suite"
# The upgrade test replaces the CRDs with the previous release's: it runs first, alone.
EDGE_TEST_KUBECONFIG="$KUBECONFIG" cargo test --locked --test upgrade -- --nocapture
EDGE_TEST_KUBECONFIG="$KUBECONFIG" cargo test --locked --test node -- --nocapture
took "suites"
kind delete cluster --name "$cluster"

# The README's sh block after the line <!-- recipe: $1 -->, into file $2.
recipe() {
  awk -v marker="<!-- recipe: $1 -->" '$0 == marker { found = 1; next } found && /^```sh$/ { block = 1; next } block && /^```$/ { exit } block' \
    README.md >"$2"
  [ -s "$2" ] || { echo "README.md has no block after <!-- recipe: $1 -->" >&2; exit 1; }
}

step "README: Test your manifests on kind"
recipe kind "$work/recipe.sh"
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

step "README: Install and the first objects, against a stand-in account over https"
recipe install "$work/install.sh"
recipe first-object "$work/first-object.sh"
require_node_image
kind create cluster --name "$install_cluster" --image "$KIND_NODE_IMAGE" --wait 120s
load_images "$install_cluster"
node_ip="$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$install_cluster-control-plane")"
# A private CA no system trusts, and the stand-in's certificate for the node's address.
pki="$work/pki"
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=edge-install-test-ca \
  -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$node_ip" \
  -addext "subjectAltName=IP:$node_ip" -keyout "$pki/tls.key" -out "$pki/tls.csr" 2>/dev/null
openssl x509 -req -in "$pki/tls.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 2 \
  -copy_extensions copy -out "$pki/tls.crt" 2>/dev/null
kubectl create namespace platform
kubectl create secret tls edge-sim-tls -n platform --cert "$pki/tls.crt" --key "$pki/tls.key"
kubectl create configmap edge-sim-fixtures -n platform --from-file=fixtures.yaml=examples/edge-sim-fixtures.yaml
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
kubectl apply -n platform -f - <<MANIFESTS
apiVersion: apps/v1
kind: Deployment
metadata: {name: edge-sim}
spec:
  selector: {matchLabels: {app: edge-sim}}
  template:
    metadata: {labels: {app: edge-sim}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: edge-sim
          image: ghcr.io/edge-operator/edge-sim:$version
          imagePullPolicy: Never
          args: [--listen=0.0.0.0:8443, --fixtures=/etc/edge-sim/fixtures.yaml,
                 --tls-cert=/etc/edge-sim-tls/tls.crt, --tls-key=/etc/edge-sim-tls/tls.key]
          ports: [{name: https, containerPort: 8443}]
          readinessProbe: {tcpSocket: {port: https}, periodSeconds: 2}
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
          volumeMounts:
            - {name: fixtures, mountPath: /etc/edge-sim, readOnly: true}
            - {name: tls, mountPath: /etc/edge-sim-tls, readOnly: true}
      volumes:
        - {name: fixtures, configMap: {name: edge-sim-fixtures}}
        - {name: tls, secret: {secretName: edge-sim-tls}}
---
apiVersion: v1
kind: Service
metadata: {name: edge-sim}
spec:
  type: NodePort
  selector: {app: edge-sim}
  ports: [{name: https, port: 8443, targetPort: https, nodePort: 30443}]
MANIFESTS
kubectl rollout status -n platform deployment/edge-sim --timeout=120s
# A Ready Pod is reachable through the NodePort only once kube-proxy has programmed it.
timeout 60 bash -c "until (exec 3<>/dev/tcp/$node_ip/30443) 2>/dev/null; do sleep 1; done" ||
  { echo "edge-sim is not reachable at $node_ip:30443 after 60 s" >&2; exit 1; }
install_diagnosis() {
  kubectl get -n edge-system deployments,pods -o wide || true
  kubectl get -n team-a edgeplatform -o yaml || true
  kubectl logs -n edge-system deployment/edge-edge-operator --tail=200 || true
  kubectl get events -n team-a --sort-by=.lastTimestamp || true
}
# The user's environment as the README defines it: the release folder (its image
# loaded above stands for the one pushed), edgectl from it, the account's URL, key file
# and CA, a zone.
printf 'demo-access-key' >"$work/access-key"
mkdir -p "$work/bin"
ln -s "$release_dir/edgectl-$version-linux-amd64" "$work/bin/edgectl"
export EDGE_RELEASE="$release_dir" EDGE_IMAGE_REPOSITORY=ghcr.io/edge-operator/edge-operator \
  EDGE_API_URL="https://$node_ip:30443" EDGE_ACCESS_KEY_FILE="$work/access-key" EDGE_CA_FILE="$pki/ca.crt" \
  EDGE_ZONE=1001 PATH="$work/bin:$PATH"
# Not traced: the blocks hold the access key.
bash -eu -o pipefail "$work/install.sh" || { install_diagnosis; exit 1; }
bash -eu -o pipefail "$work/first-object.sh" || { install_diagnosis; exit 1; }
kind delete cluster --name "$install_cluster"
took "README install"
