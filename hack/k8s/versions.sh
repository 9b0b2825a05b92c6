# Pinned versions of the local control plane. Keep K8S_VERSION in step with go.mod.
K8S_VERSION=v1.36.3
HELM_VERSION=v3.22.0
GO_MIN_VERSION=1.26.0
EDGE_CACHE_DIR="${EDGE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-operator}"
K8S_BIN_DIR="${EDGE_CACHE_DIR}/k8s-${K8S_VERSION}/bin"
