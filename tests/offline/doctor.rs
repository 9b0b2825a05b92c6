//! `edgectl doctor` against https edge-sim with a private CA: every check passes with
//! the right key and CA, and each failure names its check (a wrong key, an untrusted
//! CA, an unreachable or unknown host) without printing the key.

use std::io::Write;

use crate::support::operator::free_port;
use crate::support::sim::{ACCESS_KEY, example_fixtures};
use crate::support::tls::{PrivateCa, https_sim};
use tokio::process::Command;

struct Report {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Report {
    /// The verdict of the line of `check`.
    fn verdict(&self, check: &str) -> Option<&str> {
        self.stdout.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            let verdict = words.next()?;
            let rest: Vec<&str> = words.collect();
            rest.join(" ").starts_with(check).then_some(verdict)
        })
    }
}

const WRONG_KEY: &str = "wrong-key-7f3c9a";

async fn doctor(base: &str, key: &str, extra: &[&str]) -> Report {
    let mut command = Command::new(env!("CARGO_BIN_EXE_edgectl"));
    command
        .arg("doctor")
        .args(extra)
        .env("EDGE_API_URL", base)
        .env("EDGE_ACCESS_KEY", key)
        .env_remove("EDGE_LOGGING_URL")
        .env_remove("EDGE_BEARER_TOKEN")
        .env_remove("EDGE_CA_FILE");
    for name in ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "EDGE_PROXY"] {
        command.env_remove(name);
    }
    let output = command.output().await.expect("edgectl runs");
    let report = Report {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    for text in [&report.stdout, &report.stderr] {
        assert!(
            !text.contains(ACCESS_KEY) && !text.contains(WRONG_KEY),
            "a key was printed: {text}"
        );
    }
    report
}

fn ca_file(ca: &PrivateCa) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("CA file");
    file.write_all(ca.pem.as_bytes()).expect("written");
    file
}

#[tokio::test]
async fn every_check_passes_with_the_right_key_and_ca_and_each_failure_is_named() {
    let ca = PrivateCa::new("edge test CA");
    let sim = https_sim(example_fixtures(), &ca.server(&["localhost"])).await;
    let base = format!("https://localhost:{}", sim.addr.port());
    let file = ca_file(&ca);
    let ca_path = file.path().to_str().expect("utf-8 path");
    let resources = [
        "--ca-file",
        ca_path,
        "--zone",
        "1001",
        "--pull-zone",
        "501",
        "--app",
        "app-shop",
    ];

    let healthy = doctor(&base, ACCESS_KEY, &resources).await;
    assert_eq!(healthy.code, 0, "{}{}", healthy.stdout, healthy.stderr);
    for check in [
        "resolve",
        "connect",
        "tls",
        "access key",
        "clock",
        "logging API",
        "zone 1001",
        "pull zone 501",
        "app app-shop",
    ] {
        assert_eq!(healthy.verdict(check), Some("ok"), "{check}:\n{}", healthy.stdout);
    }
    assert_eq!(healthy.verdict("proxy"), Some("skip"), "{}", healthy.stdout);

    let wrong_key = doctor(&base, WRONG_KEY, &resources).await;
    assert_eq!(wrong_key.code, 1);
    assert_eq!(wrong_key.verdict("tls"), Some("ok"), "{}", wrong_key.stdout);
    assert_eq!(wrong_key.verdict("access key"), Some("FAIL"), "{}", wrong_key.stdout);
    assert_eq!(wrong_key.verdict("platform"), Some("skip"), "{}", wrong_key.stdout);

    let untrusted = doctor(&base, ACCESS_KEY, &[]).await;
    assert_eq!(untrusted.code, 1);
    assert_eq!(untrusted.verdict("tls"), Some("FAIL"), "{}", untrusted.stdout);
    assert!(
        untrusted.stdout.contains("not signed by a trusted CA"),
        "{}",
        untrusted.stdout
    );

    let invisible = doctor(&base, ACCESS_KEY, &["--ca-file", ca_path, "--zone", "999999"]).await;
    assert_eq!(invisible.code, 1);
    assert_eq!(invisible.verdict("zone 999999"), Some("FAIL"), "{}", invisible.stdout);
}

#[tokio::test]
async fn an_unreachable_or_unknown_host_fails_before_any_key_is_sent() {
    let refused = doctor(&format!("http://127.0.0.1:{}", free_port()), ACCESS_KEY, &[]).await;
    assert_eq!(refused.code, 1);
    assert_eq!(refused.verdict("resolve"), Some("ok"), "{}", refused.stdout);
    assert_eq!(refused.verdict("connect"), Some("FAIL"), "{}", refused.stdout);

    let unknown = doctor("https://edge-doctor.invalid", ACCESS_KEY, &[]).await;
    assert_eq!(unknown.code, 1);
    assert_eq!(unknown.verdict("resolve"), Some("FAIL"), "{}", unknown.stdout);
    assert_eq!(unknown.verdict("platform"), Some("skip"), "{}", unknown.stdout);
}

#[tokio::test]
async fn the_report_is_json_on_request() {
    let refused = doctor(
        &format!("http://127.0.0.1:{}", free_port()),
        ACCESS_KEY,
        &["-o", "json"],
    )
    .await;
    let checks: serde_json::Value = serde_json::from_str(&refused.stdout).expect("JSON");
    let connect = checks
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["check"] == "connect"))
        .expect("the connect check");
    assert_eq!(connect["verdict"], "fail");
}
