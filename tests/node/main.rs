//! The product as users deploy it, on a cluster whose node runs Pods: the chart installs
//! the operator image and the in-cluster emulator, and the tests check what a user
//! relies on (restricted Pods, probes, the ServiceAccount token, Events, upgrade,
//! failover, SIGTERM, uninstall).
//!
//! Any cluster works whose kubeconfig is in `EDGE_TEST_KUBECONFIG` and whose nodes hold
//! the images of `hack/image/build.sh` (they are never pulled): `hack/cluster.sh up
//! --node` with `hack/cluster.sh load-image` (as `make test` does), or kind with `kind
//! load image-archive` (`make e2e-kind`). Not run by a bare `cargo test`:
//! `cargo test --test node`.

#[path = "../support/mod.rs"]
mod support;

mod chart_on_node;
mod release;
