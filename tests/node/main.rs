//! The product as users deploy it, on a cluster whose node runs Pods: the chart installs
//! the operator image and the in-cluster emulator, and the tests check what a user
//! relies on (restricted Pods, probes, the ServiceAccount token, Events, upgrade,
//! failover, SIGTERM, uninstall).
//!
//! Any cluster works whose kubeconfig is in `EDGE_TEST_KUBECONFIG` and whose nodes hold
//! the images of `hack/image/build.sh` (they are never pulled): `make e2e-kind` (as
//! `make test` does) creates a kind cluster and loads them with `kind load
//! image-archive`; it also names the folder of `hack/release.sh` in
//! `EDGE_TEST_RELEASE_DIR`, whose packaged chart one test installs. Not run by a bare
//! `cargo test`: `cargo test --test node`.

#[path = "../support/mod.rs"]
mod support;

mod chart_on_node;
mod release;
mod release_folder;
