# Pinned versions of the local control plane. Keep K8S_VERSION in step with go.mod.
K8S_VERSION=v1.36.3
HELM_VERSION=v3.22.0
# The Kubernetes minor of helm v3.22's client-go (v0.37), as its release build records it.
HELM_K8S_MINOR=37
# promtool's Go module (Prometheus 3.x modules are tagged v0.3xx).
PROMETHEUS_MODULE_VERSION=v0.316.0
# The Prometheus Operator whose ServiceMonitor and PrometheusRule CRDs the chart targets.
PROMETHEUS_OPERATOR_VERSION=v0.85.0
# The first commit that shipped the Helm chart (0.1.0): the release the upgrade test
# (tests/upgrade) installs before upgrading to the working tree.
PREVIOUS_RELEASE_COMMIT=38cd4b3e633715b86a752e033959292ca3c94d7e
GO_MIN_VERSION=1.26.0
EDGE_CACHE_DIR="${EDGE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}"
K8S_BIN_DIR="${EDGE_CACHE_DIR}/k8s-${K8S_VERSION}/bin"
