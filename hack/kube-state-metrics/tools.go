//go:build tools

// Package tools pins kube-state-metrics in go.mod; hack/k8s/build.sh builds it.
package tools

import _ "k8s.io/kube-state-metrics/v2"
