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

/// The release's platforms: (platform suffix, ELF machine, image architecture).
const PLATFORMS: [(&str, u16, &str); 2] = [("linux-amd64", 62, "amd64"), ("linux-arm64", 183, "arm64")];
const BINARIES: [&str; 3] = ["edge-operator", "edge-sim", "edgectl"];

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
        format!("edge-sim-{VERSION}.oci.tar"),
        format!("edge-sim-{VERSION}.oci.tar.cdx.json"),
        "SHA256SUMS".to_string(),
    ];
    for (platform, _, _) in PLATFORMS {
        expected.extend(BINARIES.map(|binary| format!("{binary}-{VERSION}-{platform}")));
    }
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

    let edgectl = dir.join(format!("edgectl-{VERSION}-linux-amd64"));
    assert!(run(&edgectl, &["--version"], &dir).contains(VERSION));
    let sim = dir.join(format!("edge-sim-{VERSION}-linux-amd64"));
    assert!(run(&sim, &["--version"], &dir).contains(VERSION));
}

/// The ELF machine of `binary` and whether it asks for a dynamic loader or has a
/// dynamic section (program header types PT_INTERP 3, PT_DYNAMIC 2).
fn elf_machine_and_dynamic(binary: &std::path::Path) -> (u16, bool) {
    let bytes = std::fs::read(binary).expect("the binary");
    assert_eq!(&bytes[..4], b"\x7fELF", "{} is an ELF file", binary.display());
    assert_eq!(bytes[4], 2, "{} is 64-bit", binary.display());
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let program_headers = u64::from_le_bytes(bytes[0x20..0x28].try_into().expect("8 bytes")) as usize;
    let (entry_size, entries) = (usize::from(u16_at(0x36)), usize::from(u16_at(0x38)));
    let dynamic = (0..entries)
        .map(|index| u32_at(program_headers + index * entry_size))
        .any(|kind| kind == 2 || kind == 3);
    (u16_at(0x12), dynamic)
}

#[test]
fn every_binary_of_the_release_is_static_and_built_for_its_platform() {
    let dir = release_dir();
    for (platform, machine, _) in PLATFORMS {
        for binary in BINARIES {
            let path = dir.join(format!("{binary}-{VERSION}-{platform}"));
            let (found_machine, dynamic) = elf_machine_and_dynamic(&path);
            assert_eq!(found_machine, machine, "{} is built for {platform}", path.display());
            assert!(
                !dynamic,
                "{} has no dynamic loader and no dynamic section",
                path.display()
            );
        }
    }
}

/// A file of the archive `tar`, by `tar -xO`.
fn archive_file(tar: &std::path::Path, name: &str) -> Vec<u8> {
    let output = Command::new("tar")
        .arg("-xOf")
        .arg(tar)
        .arg(name)
        .output()
        .expect("tar runs");
    assert!(output.status.success(), "{name} in {}", tar.display());
    output.stdout
}

#[test]
fn each_image_lists_amd64_and_arm64_under_one_index_and_runs_as_non_root() {
    let dir = release_dir();
    for image in ["edge-operator", "edge-sim"] {
        let archive = dir.join(format!("{image}-{VERSION}.oci.tar"));
        let json = |name: &str| -> serde_json::Value {
            serde_json::from_slice(&archive_file(&archive, name)).expect("the archive's JSON")
        };
        let blob = |digest: &serde_json::Value| {
            let digest = digest.as_str().expect("a digest");
            json(&format!("blobs/sha256/{}", digest.trim_start_matches("sha256:")))
        };
        let top = &json("index.json")["manifests"][0];
        assert_eq!(
            top["annotations"]["io.containerd.image.name"],
            format!("ghcr.io/edge-operator/{image}:{VERSION}")
        );
        let index = blob(&top["digest"]);
        let manifests = index["manifests"].as_array().expect("the image index");
        let architectures: Vec<&str> = manifests
            .iter()
            .map(|manifest| manifest["platform"]["architecture"].as_str().expect("an architecture"))
            .collect();
        assert_eq!(architectures, PLATFORMS.map(|(_, _, architecture)| architecture));
        let chart = dir.join(format!("edge-operator-{VERSION}.tgz"));
        let values = String::from_utf8(archive_file(&chart, "edge-operator/values.yaml")).expect("values.yaml");
        let pinned = format!("digest: {}", top["digest"]);
        assert!(
            values.contains(&pinned),
            "the packaged chart pins {image} by its index: {pinned}"
        );
        for manifest in manifests {
            let config = blob(&blob(&manifest["digest"])["config"]["digest"]);
            assert_eq!(config["architecture"], manifest["platform"]["architecture"]);
            assert_eq!(config["config"]["User"], "65532:65532", "{image} runs as nonroot");
        }
    }
}

#[test]
fn each_sbom_validates_and_names_every_binary_its_crates_and_the_ca_bundle_and_no_host_package() {
    let dir = release_dir();
    for image in ["edge-operator", "edge-sim"] {
        let path = dir.join(format!("{image}-{VERSION}.oci.tar.cdx.json"));
        let text = std::fs::read_to_string(&path).expect("the SBOM");
        let sbom: serde_json::Value = serde_json::from_str(&text).expect("the SBOM is JSON");
        assert_eq!(sbom["bomFormat"], "CycloneDX");
        let subject = &sbom["metadata"]["component"];
        assert_eq!(subject["type"], "container");
        assert_eq!(subject["name"], format!("ghcr.io/edge-operator/{image}"));
        assert_eq!(subject["version"], VERSION);
        let components = sbom["components"].as_array().expect("components");
        let named = |name: &str| components.iter().any(|c| c["name"] == name);
        for name in ["kube", "tokio", "rustls", "certifi", "rust-std", "musl"]
            .into_iter()
            .chain(BINARIES)
        {
            assert!(named(name), "{image}'s SBOM lists {name}");
        }
        for target in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
            let binaries = components
                .iter()
                .filter(|c| c["type"] == "application" && c["bom-ref"].as_str().is_some_and(|r| r.ends_with(target)))
                .count();
            assert_eq!(
                binaries,
                BINARIES.len(),
                "{image}'s SBOM has each binary built for {target}"
            );
        }
        let purls: Vec<&str> = components.iter().filter_map(|c| c["purl"].as_str()).collect();
        assert!(
            purls.iter().all(|purl| {
                [
                    "pkg:cargo/",
                    "pkg:pypi/certifi@",
                    "pkg:generic/rust-std@",
                    "pkg:generic/musl?",
                ]
                .iter()
                .any(|origin| purl.starts_with(origin))
            }),
            "{image}'s SBOM names crates, what the toolchain links and the CA bundle only: {:?}",
            purls
                .iter()
                .filter(|p| !p.starts_with("pkg:cargo/"))
                .collect::<Vec<_>>()
        );

        // The schema check the release ran, on this file and on a spoiled copy of it.
        let Some(python) = std::env::var_os("EDGE_RELEASE_PYTHON") else {
            panic!("EDGE_RELEASE_PYTHON names the Python of hack/image/tools.sh (make e2e-kind sets it)")
        };
        let check = |file: &std::path::Path| {
            Command::new(&python)
                .arg(crate::support::cluster::repo_root().join("hack/image/sbom.py"))
                .arg("--check")
                .arg(file)
                .output()
                .expect("sbom.py runs")
        };
        assert!(check(&path).status.success(), "{image}'s SBOM is valid CycloneDX 1.5");
        let spoiled = tempfile::NamedTempFile::new().expect("a temporary file");
        std::fs::write(
            spoiled.path(),
            text.replacen("\"type\": \"library\"", "\"type\": \"crate\"", 1),
        )
        .expect("the spoiled copy");
        let refused = check(spoiled.path());
        assert!(
            !refused.status.success(),
            "a component of type crate is refused by the schema"
        );
        assert!(String::from_utf8_lossy(&refused.stderr).contains("not a valid CycloneDX 1.5 SBOM"));
    }
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
