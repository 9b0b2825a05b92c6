//! The folder `make release` publishes (`hack/release.sh`): its checksums verify, each
//! image has its SBOM, the binaries run, and the packaged chart installs with the
//! folder's images and reconciles.

use std::path::PathBuf;
use std::process::Command;

use edge_operator::controller::kinds::AccessListConfig;
use kube::Api;

use super::chart_on_node::{access_list, in_sync_with_spec};
use super::release::Release;
use crate::support::cluster::cluster;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn release_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("EDGE_TEST_RELEASE_DIR")
            .expect("EDGE_TEST_RELEASE_DIR names the folder of hack/release.sh (make e2e-kind makes one)"),
    )
}

fn run(program: &std::path::Path, args: &[&str], dir: &std::path::Path) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{} {args:?}: {all}", program.display());
    all
}

#[test]
fn the_release_folder_holds_every_artefact_with_a_checksum_that_verifies() {
    let dir = release_dir();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("the release folder")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut expected = vec![
        format!("edge-operator-{VERSION}.oci.tar"),
        format!("edge-operator-{VERSION}.oci.tar.cdx.json"),
        format!("edge-operator-{VERSION}.tgz"),
        format!("edge-sim-{VERSION}-linux-amd64"),
        format!("edge-sim-{VERSION}.oci.tar"),
        format!("edge-sim-{VERSION}.oci.tar.cdx.json"),
        format!("edgectl-{VERSION}-linux-amd64"),
        "SHA256SUMS".to_string(),
    ];
    expected.sort();
    assert_eq!(files, expected);

    let checked = run(
        std::path::Path::new("sha256sum"),
        &["--check", "--strict", "SHA256SUMS"],
        &dir,
    );
    assert_eq!(
        checked.lines().filter(|line| line.ends_with(": OK")).count(),
        expected.len() - 1,
        "every other file is listed and verifies: {checked}"
    );

    for image in ["edge-operator", "edge-sim"] {
        let path = dir.join(format!("{image}-{VERSION}.oci.tar.cdx.json"));
        let sbom: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("the SBOM")).expect("the SBOM is JSON");
        assert_eq!(sbom["bomFormat"], "CycloneDX");
        let subject = &sbom["metadata"]["component"];
        assert_eq!(subject["type"], "container");
        assert_eq!(subject["name"], format!("ghcr.io/edge-operator/{image}"));
        assert_eq!(subject["version"], VERSION);
        let components = sbom["components"].as_array().expect("components");
        let named = |name: &str| components.iter().any(|c| c["name"] == name);
        for name in ["edge-operator", "kube", "tokio", "rustls", "libc6", "ca-certificates"] {
            assert!(named(name), "{image}'s SBOM lists {name}");
        }
    }

    let edgectl = dir.join(format!("edgectl-{VERSION}-linux-amd64"));
    assert!(run(&edgectl, &["--version"], &dir).contains(VERSION));
    let sim = dir.join(format!("edge-sim-{VERSION}-linux-amd64"));
    assert!(run(&sim, &["--version"], &dir).contains(VERSION));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_packaged_chart_installs_with_the_folders_images_and_reconciles() {
    let chart = release_dir().join(format!("edge-operator-{VERSION}.tgz"));
    let release = Release::install_chart(&chart.display().to_string(), "node-packaged", "emulator", &[]);
    let namespace = release.namespace.name.clone();
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace);
    cluster().apply(access_list(&namespace, "packaged", 9101, true));
    in_sync_with_spec(
        &api,
        "packaged",
        "the packaged chart's operator enabled configuration 9101",
    )
    .await;
}
