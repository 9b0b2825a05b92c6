//! One version everywhere a user reads one: Cargo's, the chart's version and
//! appVersion, the image tags and archive names the docs give, and a CHANGELOG entry.

use crate::support::cluster::repo_root;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Every version that follows one of `prefixes` in `text` (e.g. `edge-sim:0.2.0`).
fn versions_after<'a>(text: &'a str, prefixes: &[&str]) -> Vec<&'a str> {
    let mut found = Vec::new();
    for prefix in prefixes {
        for (at, _) in text.match_indices(prefix) {
            let rest = &text[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            let version = rest[..end].trim_end_matches('.');
            if version.split('.').count() == 3 && version.split('.').all(|p| !p.is_empty()) {
                found.push(version);
            }
        }
    }
    found
}

#[test]
fn the_chart_and_every_image_tag_the_docs_give_carry_cargos_version() {
    let chart: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo_root().join("charts/edge-operator/Chart.yaml")).expect("Chart.yaml"),
    )
    .expect("YAML");
    assert_eq!(chart["version"].as_str(), Some(VERSION), "Chart.yaml version");
    assert_eq!(chart["appVersion"].as_str(), Some(VERSION), "Chart.yaml appVersion");

    let mut files = vec![repo_root().join("README.md"), repo_root().join("Dockerfile")];
    files.extend(
        std::fs::read_dir(repo_root().join("docs"))
            .expect("docs/")
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "md") && !path.ends_with("benchmark.md")),
    );
    let prefixes = [
        "edge-operator/edge-operator:",
        "edge-operator/edge-sim:",
        "edge-operator-",
        "edge-sim-",
        "charts/edge-operator:",
        "targetRevision: ",
    ];
    let mut tags = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        for version in versions_after(&text, &prefixes) {
            tags += 1;
            assert_eq!(version, VERSION, "{} names an image of {version}", file.display());
        }
    }
    assert!(tags >= 4, "the docs name the images and archives: {tags}");
}

#[test]
fn the_gitops_examples_install_this_version() {
    let read = |file: &str| -> Vec<serde_yaml::Value> {
        let text = std::fs::read_to_string(repo_root().join("examples/gitops").join(file)).expect("the example");
        serde_yaml::Deserializer::from_str(&text)
            .map(|document| serde::Deserialize::deserialize(document).expect("YAML"))
            .collect()
    };
    let application = read("argocd/application.yaml")
        .into_iter()
        .find(|d| d["kind"] == "Application")
        .expect("an Application");
    assert_eq!(
        application["spec"]["source"]["targetRevision"].as_str(),
        Some(VERSION),
        "examples/gitops/argocd/application.yaml installs this version"
    );
    let [major, minor, _] = [0, 1, 2].map(|at| {
        VERSION
            .split('.')
            .nth(at)
            .and_then(|n| n.parse::<u64>().ok())
            .expect("a version x.y.z")
    });
    let source = read("flux/operator/ocirepository.yaml").remove(0);
    assert_eq!(
        source["spec"]["ref"]["semver"].as_str(),
        Some(format!(">={major}.{minor}.0 <{major}.{}.0", minor + 1).as_str()),
        "examples/gitops/flux/operator/ocirepository.yaml takes the releases of this minor version"
    );
    let subject = source["spec"]["verify"]["matchOIDCIdentity"][0]["subject"]
        .as_str()
        .expect("the signer's subject");
    assert!(
        subject.ends_with(&format!("@refs/tags/v{major}\\.{minor}\\.[0-9]+$")),
        "the Flux example accepts signatures of this minor version's tags only: {subject}"
    );
}

/// Every signature check the docs show names the release workflow of this version
/// exactly: no regular expression another tag, workflow or repository could match.
#[test]
fn the_docs_verify_signatures_against_the_exact_release_workflow_of_this_version() {
    let workflow = ".github/workflows/release.yaml";
    assert!(repo_root().join(workflow).exists(), "{workflow} signs the release");
    let identity = format!("https://github.com/edge-operator/edge-operator/{workflow}@refs/tags/v");
    let mut checks = 0;
    for file in ["README.md", "docs/operations.md", "docs/gitops.md"] {
        let text = std::fs::read_to_string(repo_root().join(file)).expect("the doc");
        assert!(
            !text.contains("--certificate-identity-regexp"),
            "{file} matches identities by a regexp"
        );
        for (at, _) in text.match_indices("--certificate-identity ") {
            let named = text[at..]
                .split_whitespace()
                .nth(1)
                .expect("an identity")
                .trim_matches('"');
            let named = if named == "$identity" {
                let defined = text.find("identity=\"").expect("the doc defines $identity") + "identity=\"".len();
                text[defined..].split('"').next().expect("a quoted identity")
            } else {
                named
            };
            let tail = if named.ends_with("$VERSION") {
                "$VERSION"
            } else {
                VERSION
            };
            assert_eq!(named, format!("{identity}{tail}"), "{file}");
            checks += 1;
        }
    }
    assert!(checks >= 2, "the README and docs/gitops.md verify signatures: {checks}");
}

#[test]
fn the_changelog_has_an_entry_for_this_version() {
    let changelog = std::fs::read_to_string(repo_root().join("CHANGELOG.md")).expect("CHANGELOG.md");
    assert!(
        changelog
            .lines()
            .any(|line| line.starts_with(&format!("## {VERSION} "))),
        "CHANGELOG.md has no `## {VERSION} — <date>` heading"
    );
}

#[test]
fn versions_are_read_after_their_prefix_only() {
    assert_eq!(
        versions_after(
            "run ghcr.io/edge-operator/edge-sim:1.2.3. Or edge-sim-10.0.1.oci.tar",
            &["edge-sim:", "edge-sim-"]
        ),
        ["1.2.3", "10.0.1"]
    );
    assert!(versions_after("edge-sim-ca and edge-operator-e2e", &["edge-sim-", "edge-operator-"]).is_empty());
}
