//! `edgectl` against a network that cannot be trusted: a local server that redirects
//! (302 and 307, to its own host and to another), streams an endless body with and
//! without `Content-Length`, drips one byte a second, or answers HTML with 200. Each
//! call ends in a one-line error, the key never reaches another host, and the peak
//! memory of the process stays within a bound.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;

use crate::support::hostile_server::{Elsewhere, elsewhere, hostile, peak_kib_until, serve};

/// The most memory (`VmHWM`) an `edgectl` call may reach whatever the server sends.
const EDGECTL_PEAK_LIMIT_KIB: u64 = 48 << 10;

/// Runs `edgectl app get x` against `base`; returns its exit code, stderr and peak
/// memory in KiB (its `VmHWM`, read until it exits).
async fn edgectl_app_get(base: &str) -> (i32, String, u64) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(["app", "get", "x", "--timeout", "3s"])
        .env("EDGE_API_URL", base)
        .env("EDGE_ACCESS_KEY", "hostile-test-key")
        .env_remove("EDGE_LOGGING_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("edgectl runs");
    let pid = child.id().expect("pid");
    let mut status = None;
    let peak = peak_kib_until(pid, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    })
    .await;
    let status = status.expect("exited");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use tokio::io::AsyncReadExt;
        pipe.read_to_string(&mut stderr).await.expect("stderr");
    }
    (status.code().unwrap_or(-1), stderr, peak)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edgectl_gives_a_one_line_error_sends_the_key_nowhere_else_and_stays_small() {
    let seen = Arc::new(Elsewhere::default());
    let other_host = serve(Router::new().fallback(elsewhere).with_state(seen.clone())).await;
    // Another host name for the same machine: a redirect there crosses hosts.
    let other_host = other_host.replace("127.0.0.1", "localhost");
    let base = serve(hostile(other_host.clone())).await;
    let cases = [
        ("redirect-302-other", "redirecting to localhost"),
        ("redirect-307-other", "redirecting to localhost"),
        ("redirect-302-same", "redirecting to 127.0.0.1"),
        ("redirect-307-same", "redirecting to 127.0.0.1"),
        ("endless", "longer than"),
        ("endless-with-length", "longer than"),
        ("endless-small-length", "cannot decode"),
        ("drip", "timed out"),
        ("html", "cannot decode"),
    ];
    let mut report = Vec::new();
    for (behaviour, expected) in cases {
        let started = std::time::Instant::now();
        let (code, stderr, peak_kib) = edgectl_app_get(&format!("{base}/{behaviour}")).await;
        let took = started.elapsed();
        assert_ne!(code, 0, "{behaviour}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{behaviour}: one line: {stderr}");
        assert!(stderr.contains(expected), "{behaviour}: {stderr}");
        assert!(
            !stderr.contains("hostile-test-key"),
            "{behaviour}: the key in an error: {stderr}"
        );
        assert!(
            peak_kib <= EDGECTL_PEAK_LIMIT_KIB,
            "{behaviour}: peak memory {peak_kib} KiB over {EDGECTL_PEAK_LIMIT_KIB} KiB"
        );
        assert!(took < Duration::from_secs(10), "{behaviour}: took {took:?}");
        report.push(format!("{behaviour}: {peak_kib} KiB peak, {took:?}"));
    }
    assert_eq!(
        seen.requests.load(Ordering::SeqCst),
        0,
        "nothing reached the other host"
    );
    assert_eq!(seen.with_key.load(Ordering::SeqCst), 0);
    eprintln!("edgectl against a hostile server:\n  {}", report.join("\n  "));
}

#[tokio::test]
async fn plain_http_beyond_loopback_is_refused_before_any_request() {
    for (url, expected) in [
        ("http://api.example.net", "clear text"),
        ("http://10.96.0.12:8080", "--allow-http-in-cluster"),
    ] {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_edgectl"))
            .args(["app", "get", "x"])
            .env("EDGE_API_URL", url)
            .env("EDGE_ACCESS_KEY", "k")
            .env_remove("EDGE_LOGGING_URL")
            .output()
            .await
            .expect("edgectl runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(expected), "{url}: {stderr}");
    }
}
