//! `edgectl plan` on the examples against edge-sim (no change, change, errors and their
//! exit codes), invalid manifests reported with their member before any call, and
//! `edgectl export` → plan showing no change.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::support::cluster::repo_root;
use crate::support::sim::{ACCESS_KEY, fixtures_at, start};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn edgectl(base: &str, args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(args)
        .env("EDGE_API_URL", base)
        .env("EDGE_ACCESS_KEY", ACCESS_KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("edgectl runs");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .await
        .expect("write");
    drop(input);
    let output = child.wait_with_output().await.expect("edgectl ends");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn access_list(name: &str, spec: &str) -> String {
    format!("apiVersion: edgeplatform.io/v1alpha1\nkind: AccessListConfig\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

#[tokio::test]
async fn plan_of_the_examples_shows_the_change_the_operator_would_make() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let examples = repo_root().join("examples").display().to_string();
    let run = edgectl(&base, &["plan", "-f", &examples], None).await;
    assert_eq!(run.code, 2, "changes: {}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("isEnabled: false → true"), "{}", run.stdout);
    assert!(run.stdout.contains("observes app app-shop"), "{}", run.stdout);
    assert!(run.stdout.contains("no read of a certificate"), "{}", run.stdout);
    assert!(
        run.stdout.contains("action: Challenge → Log"),
        "the staged rollout logs first: {}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("then action Block once 1h of Log showed at most 500 matches from at most 50 IPs"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.ends_with("3 to change, 1 unchanged, 0 errors\n"),
        "{}",
        run.stdout
    );
    let json = edgectl(&base, &["plan", "-f", &examples, "-o", "json"], None).await;
    let planned: Value = serde_json::from_str(&json.stdout).expect("JSON");
    let change = planned
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["kind"] == "AccessListConfig" && p["name"] == "block-known-bad-actors")
        .expect("the access list");
    assert_eq!(change["outcome"], "change");
    assert_eq!(
        change["changes"][0],
        serde_json::json!({"member": "isEnabled", "before": "false", "after": "true"})
    );
    assert!(sim.sim.journal().iter().all(|e| e.method == "GET"), "plan reads only");
}

#[tokio::test]
async fn plan_exits_0_without_changes_and_1_on_errors() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let in_sync = access_list(
        "tor",
        "  shieldZoneId: 1001\n  listName: Tor exit nodes\n  enabled: true\n  action: Challenge\n",
    );
    let run = edgectl(&base, &["plan", "-f", "-"], Some(&in_sync)).await;
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("already matches"), "{}", run.stdout);
    let stream = format!(
        "{in_sync}---\n{}---\n{}",
        access_list("missing", "  shieldZoneId: 1001\n  listName: nope\n  enabled: true\n"),
        access_list(
            "secret",
            "  shieldZoneId: 1001\n  configurationId: 9101\n  enabled: true\n  accessKeySecretRef: {name: absent, key: accessKey}\n"
        )
    );
    let run = edgectl(&base, &["plan", "-f", "-"], Some(&stream)).await;
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("AccessListNotFound"), "{}", run.stdout);
    assert!(
        run.stdout.contains("Secret default/absent is not in --secrets-from"),
        "{}",
        run.stdout
    );
    let secrets = tempfile_with(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: absent}}\nstringData: {{accessKey: {ACCESS_KEY}}}\n"
    ));
    let stream = access_list(
        "secret",
        "  shieldZoneId: 1001\n  configurationId: 9102\n  enabled: true\n  accessKeySecretRef: {name: absent, key: accessKey}\n",
    );
    let secrets_path = secrets.path().display().to_string();
    let run = edgectl(
        &base,
        &["plan", "-f", "-", "--secrets-from", &secrets_path],
        Some(&stream),
    )
    .await;
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains(ACCESS_KEY) && !run.stderr.contains(ACCESS_KEY));
}

/// A file holding `text`, removed when dropped.
fn tempfile_with(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().expect("a file");
    std::fs::write(file.path(), text).expect("write");
    file
}

#[tokio::test]
async fn invalid_manifests_are_reported_with_their_member_before_any_call() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let stream = format!(
        "{}---\n{}",
        access_list(
            "both",
            "  shieldZoneId: 1001\n  configurationId: 9101\n  listName: Tor exit nodes\n  enabled: true\n"
        ),
        access_list(
            "zero",
            "  shieldZoneId: 0\n  configurationId: 9101\n  enabled: true\n  colour: red\n"
        )
    );
    let run = edgectl(&base, &["plan", "-f", "-"], Some(&stream)).await;
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("-#1")
            && run
                .stdout
                .contains("exactly one of spec.configurationId and spec.listName"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("-#2") && run.stdout.contains("spec.shieldZoneId"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("nothing was sent to the platform"),
        "{}",
        run.stdout
    );
    assert!(sim.sim.journal().is_empty(), "no platform call");
}

#[tokio::test]
async fn export_then_plan_shows_no_change() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let export = edgectl(&base, &["export", "access-lists", "--zone", "1001", "-n", "edge"], None).await;
    assert_eq!(export.code, 0, "{}", export.stderr);
    assert_eq!(
        export.stdout.matches("kind: AccessListConfig").count(),
        3,
        "{}",
        export.stdout
    );
    assert!(export.stdout.contains("name: known-bad-actors"), "{}", export.stdout);
    assert!(export.stdout.contains("managementPolicy: Observe"), "{}", export.stdout);
    assert!(
        export.stdout.contains("namespace: edge"),
        "-n is --namespace: {}",
        export.stdout
    );
    let plan = edgectl(&base, &["plan", "-f", "-"], Some(&export.stdout)).await;
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(
        plan.stdout.ends_with("0 to change, 3 unchanged, 0 errors\n"),
        "{}",
        plan.stdout
    );
    let managed = edgectl(&base, &["export", "access-lists", "--zone", "1001", "--manage"], None).await;
    let plan = edgectl(&base, &["plan", "-f", "-"], Some(&managed.stdout)).await;
    assert_eq!(plan.code, 0, "managed exports also plan no change: {}", plan.stdout);
}

/// A folder of its own holding `manifests`, removed when dropped.
fn folder_with(manifests: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a folder");
    for (name, text) in manifests {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

const MALFORMED: &str = "apiVersion: edgeplatform.io/v1alpha1\nkind: AccessListConfig\nmetadata: {name: x\nspec: [";

#[tokio::test]
async fn usage_and_load_errors_exit_1_never_2() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let malformed_folder = folder_with(&[("list.yaml", MALFORMED)]);
    let malformed = malformed_folder.path().display().to_string();
    for args in [
        &["plan", "-f", "/nonexistent/edge-manifests"][..],
        &["plan", "-f", &malformed],
        &["plan"],
        &["plan", "-f", &malformed, "--no-such-flag"],
    ] {
        let run = edgectl(&base, args, None).await;
        assert_eq!(run.code, 1, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(!run.stderr.is_empty(), "{args:?} says why");
    }
    let run = edgectl(&base, &["plan", "--help"], None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[tokio::test]
async fn the_ci_example_propagates_the_plan_exit_code() {
    let sim = start(fixtures_at()).await;
    let edgectl = std::path::Path::new(env!("CARGO_BIN_EXE_edgectl"));
    let path = format!(
        "{}:{}",
        edgectl.parent().expect("a folder").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let change = access_list(
        "known-bad",
        "  shieldZoneId: 1001\n  configurationId: 9101\n  enabled: true\n",
    );
    let changes = folder_with(&[("list.yaml", &change)]);
    let malformed = folder_with(&[("list.yaml", MALFORMED)]);
    for (manifests, expected) in [
        (changes.path().display().to_string(), 2),
        ("/nonexistent/edge-manifests".to_string(), 1),
        (malformed.path().display().to_string(), 1),
    ] {
        let output = Command::new("bash")
            .arg(repo_root().join("examples/ci/plan-on-pull-request.sh"))
            .env("PATH", &path)
            .env("EDGE_API_URL", sim.base_url())
            .env("EDGE_ACCESS_KEY", ACCESS_KEY)
            .env("MANIFESTS", &manifests)
            .output()
            .await
            .expect("bash runs");
        assert_eq!(
            output.status.code(),
            Some(expected),
            "{manifests}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
