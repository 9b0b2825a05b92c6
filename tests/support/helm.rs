//! Helm against the test cluster, with its own cache and configuration directories.

use std::path::Path;
use std::process::Command;

use super::cluster::{cluster, repo_root, test_tool};

/// The chart's directory.
pub(crate) fn chart() -> String {
    repo_root().join("charts/edge-operator").display().to_string()
}

/// The value every release installed by the suites sets: their cluster holds the CRDs
/// applied apart (`crds/`), as a cluster shared by several releases would.
pub(crate) const CRDS_APPLIED_APART: &str = "--set=crds.enabled=false";

/// Runs helm against the test cluster, returning (success, stdout, stderr).
pub(crate) fn helm(args: &[&str]) -> (bool, String, String) {
    run(args, &cluster().kubeconfig)
}

/// Runs helm with no cluster (`helm template`, `helm lint`: `lookup` finds nothing, as
/// under Argo CD), returning (success, stdout, stderr).
pub(crate) fn helm_offline(args: &[&str]) -> (bool, String, String) {
    run(args, Path::new("/dev/null"))
}

fn run(args: &[&str], kubeconfig: &Path) -> (bool, String, String) {
    let output = Command::new(test_tool("helm"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HELM_CACHE_HOME", std::env::temp_dir().join("edge-operator-helm-cache"))
        .env(
            "HELM_CONFIG_HOME",
            std::env::temp_dir().join("edge-operator-helm-config"),
        )
        .env("HELM_DATA_HOME", std::env::temp_dir().join("edge-operator-helm-data"))
        .output()
        .expect("helm runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
