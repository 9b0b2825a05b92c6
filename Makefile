# edge-operator — the two commands of the README:
#   make demo    start the local control plane, edge-sim and the operator with examples
#   make test    run every test (fmt, clippy, unit, emulator, client, e2e)
#   make bench   the benchmark table (event search, operator at scale, rate discipline)
#   make images  the operator and edge-sim images as OCI archives (no container engine)
#   make release  what a release publishes, into dist/<version>: multi-arch images, SBOMs,
#                 the chart, static binaries for linux/amd64 and arm64, SHA256SUMS
#   make e2e-kind  the Pod-level suites and the README's kind recipe on kind (root: starts
#                  a Docker engine when none runs, builds kind and its node image)
SHELL := /bin/bash

.PHONY: demo down test bench crds parity-docs cluster-up cluster-down images release e2e-kind k8s-binaries

demo:
	hack/demo.sh up

down:
	hack/demo.sh down

test:
	hack/test.sh

bench:
	hack/bench/run.sh

# Regenerates the CRDs from the Rust types: crds/, the chart's templates of them, its
# list of kinds and the Argo CD health checks of each kind.
crds:
	source hack/k8s/versions.sh && CARGO_TARGET_DIR="$${CARGO_TARGET_DIR:-$$EDGE_CACHE_DIR/target}" \
	  cargo run --quiet --bin edge-operator -- crds --dir crds --chart-templates charts/edge-operator/templates/crds \
	    --chart-kinds charts/edge-operator/templates/_kinds.tpl
	hack/argocd-health.sh

# Writes the parity report of tests/recordings/published into docs/emulator.md.
parity-docs:
	hack/parity-docs.sh

k8s-binaries:
	hack/k8s/build.sh

cluster-up:
	hack/cluster.sh up

cluster-down:
	hack/cluster.sh down

images:
	hack/image/build.sh

release:
	hack/release.sh

e2e-kind:
	hack/e2e-kind.sh
