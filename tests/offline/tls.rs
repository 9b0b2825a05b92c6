//! The production transport: edgectl over https to edge-sim with a private CA, through
//! a CONNECT proxy, and never through a proxy for plain http.

use std::io::Write;

use crate::support::sim::{ACCESS_KEY, fixtures_at, start};
use crate::support::tls::{PrivateCa, RecordingProxy, https_sim};
use tokio::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `edgectl app get app-shop` against `base`, with no proxy variable but `proxy_env`.
async fn app_get(base: &str, extra: &[&str], proxy_env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_edgectl"));
    command
        .args(["app", "get", "app-shop"])
        .args(extra)
        .env("EDGE_API_URL", base)
        .env("EDGE_ACCESS_KEY", ACCESS_KEY)
        .env_remove("EDGE_LOGGING_URL")
        .env_remove("EDGE_CA_FILE")
        .env_remove("EDGE_PROXY");
    for name in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        command.env_remove(name);
    }
    command.envs(proxy_env.iter().copied());
    let output = command.output().await.expect("edgectl runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn pem_file(pem: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temporary file");
    file.write_all(pem.as_bytes()).expect("written");
    file
}

#[tokio::test]
async fn a_private_ca_is_trusted_only_when_given() {
    let ca = PrivateCa::new("edge test CA");
    let sim = https_sim(fixtures_at(), &ca.server(&["127.0.0.1", "localhost"])).await;
    let base = sim.base_url();
    let ca_file = pem_file(&ca.pem);
    let ca_path = ca_file.path().to_str().expect("utf-8 path");

    let trusted = app_get(&base, &["--ca-file", ca_path], &[]).await;
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    assert!(trusted.stdout.contains("app-shop"), "{}", trusted.stdout);
    let only = app_get(&base, &["--ca-file", ca_path, "--ca-file-only"], &[]).await;
    assert_eq!(only.code, 0, "{}", only.stderr);

    let untrusted = app_get(&base, &[], &[]).await;
    assert_eq!(untrusted.code, 1);
    let host = format!("{}", sim.addr);
    assert_eq!(untrusted.stderr.trim().lines().count(), 1, "{}", untrusted.stderr);
    assert!(
        untrusted.stderr.contains(&host) && untrusted.stderr.contains("not signed by a trusted CA"),
        "{}",
        untrusted.stderr
    );
    assert!(!untrusted.stderr.contains(ACCESS_KEY));

    let other = PrivateCa::new("another CA");
    let other_file = pem_file(&other.pem);
    let wrong_ca = app_get(&base, &["--ca-file", other_file.path().to_str().expect("utf-8")], &[]).await;
    assert!(
        wrong_ca.stderr.contains("not signed by a trusted CA"),
        "{}",
        wrong_ca.stderr
    );
}

#[tokio::test]
async fn a_certificate_for_another_host_is_refused() {
    let ca = PrivateCa::new("edge test CA");
    let sim = https_sim(fixtures_at(), &ca.server(&["api.example.net"])).await;
    let ca_file = pem_file(&ca.pem);
    let run = app_get(
        &sim.base_url(),
        &["--ca-file", ca_file.path().to_str().expect("utf-8")],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("not valid for this host name") && run.stderr.contains(&sim.addr.to_string()),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_ca_file_without_certificates_is_a_usage_error() {
    let sim = start(fixtures_at()).await;
    let file = pem_file("not a certificate");
    let run = app_get(
        &sim.base_url(),
        &["--ca-file", file.path().to_str().expect("utf-8")],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("--ca-file") && run.stderr.contains("no PEM certificate"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn proxies_of_the_environment_never_carry_plain_http() {
    let proxy = RecordingProxy::start().await;
    let sim = start(fixtures_at()).await;
    let run = app_get(
        &sim.base_url(),
        &[],
        &[
            ("HTTP_PROXY", &proxy.url),
            ("http_proxy", &proxy.url),
            ("ALL_PROXY", &proxy.url),
            ("HTTPS_PROXY", &proxy.url),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let explicit = app_get(&sim.base_url(), &["--proxy", &proxy.url], &[]).await;
    assert_eq!(explicit.code, 0, "{}", explicit.stderr);
    assert!(proxy.connections().is_empty(), "{:?}", proxy.connections());
    assert_eq!(sim.sim.journal().len(), 2, "both requests went straight to edge-sim");
}

#[tokio::test]
async fn https_goes_through_a_connect_proxy_that_never_sees_the_key() {
    let ca = PrivateCa::new("edge test CA");
    let sim = https_sim(fixtures_at(), &ca.server(&["127.0.0.1"])).await;
    let ca_file = pem_file(&ca.pem);
    let ca_path = ca_file.path().to_str().expect("utf-8");
    let proxy = RecordingProxy::start().await;

    let run = app_get(&sim.base_url(), &["--ca-file", ca_path], &[("HTTPS_PROXY", &proxy.url)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let connections = proxy.connections();
    assert_eq!(connections.len(), 1, "{connections:?}");
    assert!(
        connections[0]
            .request_line
            .starts_with(&format!("CONNECT {} ", sim.addr)),
        "{}",
        connections[0].request_line
    );
    let seen = String::from_utf8_lossy(&connections[0].bytes);
    assert!(
        !seen.contains(ACCESS_KEY) && !seen.contains("/mc/apps"),
        "the proxy saw the request in clear"
    );

    let bypassed = app_get(
        &sim.base_url(),
        &["--ca-file", ca_path, "--proxy", "none"],
        &[("HTTPS_PROXY", &proxy.url)],
    )
    .await;
    assert_eq!(bypassed.code, 0, "{}", bypassed.stderr);
    let excluded = app_get(
        &sim.base_url(),
        &["--ca-file", ca_path],
        &[("HTTPS_PROXY", &proxy.url), ("NO_PROXY", "127.0.0.1")],
    )
    .await;
    assert_eq!(excluded.code, 0, "{}", excluded.stderr);
    assert_eq!(proxy.connections().len(), 1, "--proxy none and NO_PROXY go direct");
}
