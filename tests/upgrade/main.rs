//! An upgrade as users run it: the previous release (`PREVIOUS_RELEASE_COMMIT` of
//! `hack/k8s/versions.sh`, its chart and examples taken from git history, its operator
//! image built from that commit by `hack/image/build.sh previous`) serves live objects;
//! then the README's upgrade block (docs/operations.md's for CRDs installed apart), read
//! from the page and run as written, moves the release to this version's chart, from the
//! release folder (`EDGE_TEST_RELEASE_DIR`, else the working tree's chart packaged).
//!
//! It installs the previous release's CRDs in place of the current ones, so it runs
//! alone, on a cluster with a node where no edgeplatform.io object exists yet:
//! `make test` runs it before the node suite. `cargo test --test upgrade`.

#[path = "../support/mod.rs"]
mod support;

// Shared with the node suite, which uses all of it.
#[allow(dead_code)]
#[path = "../node/release.rs"]
mod release;

mod from_previous_release;
