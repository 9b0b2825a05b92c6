//! `edgectl` against a real edge-sim: every subcommand, JSON output, exit codes and
//! help texts.

use std::process::Stdio;
use std::time::Duration;

use crate::support::sim::{ACCESS_KEY, JWT_SECRET, bearer_token, fixtures_at, http, insert_events, start};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// `edgectl` against `base` with the example access key.
pub(crate) fn command(base: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_edgectl"));
    command
        .args(args)
        .env("EDGE_API_URL", base)
        .env("EDGE_ACCESS_KEY", ACCESS_KEY)
        .env_remove("EDGE_LOGGING_URL")
        .env_remove("EDGE_BEARER_TOKEN");
    command
}

pub(crate) async fn edgectl(base: &str, args: &[&str]) -> Run {
    run(command(base, args)).await
}

pub(crate) async fn run(mut command: Command) -> Run {
    let output = command.output().await.expect("edgectl runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

async fn seed_events(base: &str) {
    let now_ms = chrono::Utc::now().timestamp_millis();
    let events: Vec<Value> = (0..30)
        .map(|i| {
            json!({"timestamp": now_ms - 1000 * (i + 1), "feature": "waf", "ruleId": if i < 20 { "942100" } else { "941100" },
                   "ip": format!("192.0.2.{}", i % 3), "ja4": "j", "ua": "curl", "url": "/login", "asn": "64500",
                   "country": if i % 2 == 0 { "DE" } else { "US" }, "action": "block"})
        })
        .collect();
    insert_events(base, 1001, &Value::from(events)).await;
}

pub(crate) fn live_fixtures() -> edge_operator::sim::SimDocument {
    let mut document = fixtures_at();
    document.clock = None;
    document
}

#[tokio::test]
async fn events_search_flat_grouped_and_json() {
    let sim = start(live_fixtures()).await;
    let base = sim.base_url();
    seed_events(&base).await;
    let flat = edgectl(
        &base,
        &[
            "events",
            "search",
            "--zone",
            "1001",
            "--since",
            "1h",
            "--filter",
            "country:eq:DE",
            "--page-size",
            "5",
        ],
    )
    .await;
    assert_eq!(flat.code, 0, "{}", flat.stderr);
    assert!(flat.stdout.starts_with("TIME"), "{}", flat.stdout);
    assert!(flat.stdout.contains("15 events, page 1 of 3"), "{}", flat.stdout);
    assert_eq!(flat.stdout.lines().count(), 7);

    let grouped = edgectl(
        &base,
        &[
            "events",
            "search",
            "--zone",
            "1001",
            "--group-by",
            "ruleId",
            "--buckets",
            "10",
            "--query",
            "login",
        ],
    )
    .await;
    assert_eq!(grouped.code, 0, "{}", grouped.stderr);
    let first = grouped.stdout.lines().nth(1).expect("a group");
    assert!(
        first.starts_with("942100") && first.contains(" 20 "),
        "{}",
        grouped.stdout
    );
    assert!(
        grouped.stdout.chars().any(|c| ('▁'..='█').contains(&c)),
        "sparkline drawn: {}",
        grouped.stdout
    );

    let json = edgectl(
        &base,
        &[
            "-o",
            "json",
            "events",
            "search",
            "--zone",
            "1001",
            "--group-by",
            "ip,country",
        ],
    )
    .await;
    let parsed: Value = serde_json::from_str(&json.stdout).expect("JSON output");
    assert_eq!(parsed["total"], 6);
}

#[tokio::test]
async fn rate_limits_access_lists_and_apps() {
    let sim = start(live_fixtures()).await;
    let base = sim.base_url();
    let limits = edgectl(&base, &["rate-limits", "list", "--zone", "1001"]).await;
    assert_eq!(limits.code, 0, "{}", limits.stderr);
    assert!(
        limits.stdout.contains("login-bruteforce") && limits.stdout.contains("RateLimit"),
        "{}",
        limits.stdout
    );
    let json = edgectl(&base, &["rate-limits", "list", "--zone", "1001", "-o", "json"]).await;
    assert_eq!(
        serde_json::from_str::<Value>(&json.stdout)
            .expect("json")
            .as_array()
            .map(Vec::len),
        Some(2)
    );

    let yaml = edgectl(&base, &["rate-limits", "list", "--zone", "1001", "-o", "yaml"]).await;
    assert_eq!(yaml.code, 0, "{}", yaml.stderr);
    assert_eq!(
        serde_yaml::from_str::<Value>(&yaml.stdout).expect("one YAML document"),
        serde_json::from_str::<Value>(&json.stdout).expect("json"),
        "-o yaml holds what -o json does"
    );

    let lists = edgectl(&base, &["access-lists", "list", "--zone", "1001"]).await;
    assert_eq!(lists.code, 0, "{}", lists.stderr);
    assert!(
        lists.stdout.contains("9101") && lists.stdout.contains("managed") && lists.stdout.contains("Block"),
        "{}",
        lists.stdout
    );

    let app = edgectl(&base, &["app", "get", "app-shop"]).await;
    assert_eq!(app.code, 0, "{}", app.stderr);
    assert!(
        app.stdout.contains("shop.example.com") && app.stdout.contains("sha256:"),
        "{}",
        app.stdout
    );
    let missing = edgectl(&base, &["app", "get", "nope"]).await;
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("application nope was not found"),
        "the platform's message: {}",
        missing.stderr
    );
    assert_eq!(missing.stderr.lines().count(), 1);
}

#[tokio::test]
async fn logs_filter_and_follow() {
    let sim = start(live_fixtures()).await;
    let base = sim.base_url();
    let entry = |i: i64, status: u16, age_ms: i64| {
        let t = chrono::Utc::now() - chrono::Duration::milliseconds(age_ms);
        json!({"timestamp": t, "requestId": format!("req-{i}"), "statusCode": status, "cacheStatus": "MISS", "url": format!("https://cdn.example.com/{i}")})
    };
    let seed = |entries: Vec<Value>| {
        let base = base.clone();
        async move {
            let response = http()
                .post(format!("{base}/_sim/pullzones/501/logs"))
                .json(&entries)
                .send()
                .await
                .expect("seed");
            assert!(response.status().is_success());
        }
    };
    seed(vec![
        entry(1, 200, 60_000),
        entry(2, 503, 50_000),
        entry(3, 502, 40_000),
    ])
    .await;
    let errors = edgectl(
        &base,
        &[
            "logs",
            "--pull-zone",
            "501",
            "--status",
            "5xx",
            "--cache-status",
            "MISS",
            "--since",
            "1h",
        ],
    )
    .await;
    assert_eq!(errors.code, 0, "{}", errors.stderr);
    assert_eq!(errors.stdout.lines().count(), 3, "{}", errors.stdout);
    assert!(!errors.stdout.contains("/1\n"));

    let mut follow = Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args([
            "logs",
            "--pull-zone",
            "501",
            "--since",
            "1h",
            "--follow",
            "--interval",
            "200ms",
        ])
        .env("EDGE_API_URL", &base)
        .env("EDGE_ACCESS_KEY", ACCESS_KEY)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("edgectl follows");
    let mut lines = BufReader::new(follow.stdout.take().expect("stdout")).lines();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("a line in time")
            .expect("read")
            .expect("open")
    };
    assert!(next().await.starts_with("TIME"));
    for expected in ["/1", "/2", "/3"] {
        assert!(next().await.ends_with(expected));
    }
    seed(vec![entry(4, 200, 0)]).await;
    assert!(next().await.ends_with("/4"), "a new entry shows up while following");
    follow.kill().await.expect("stopped");
}

#[tokio::test]
async fn bad_input_exits_1_with_one_line_and_help_is_complete() {
    let sim = start(live_fixtures()).await;
    let base = sim.base_url();
    for args in [
        &["events", "search", "--zone", "1001", "--filter", "ip:near:1"][..],
        &["events", "search", "--zone", "1001", "--group-by", "colour"],
        &[
            "events",
            "search",
            "--zone",
            "1001",
            "--from",
            "yesterday",
            "--to",
            "now",
        ],
    ] {
        let run = edgectl(&base, args).await;
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.starts_with("edgectl: "));
    }
    let rejected = edgectl(&base, &["events", "search", "--zone", "1001", "--page=-1"]).await;
    assert_eq!(rejected.code, 1);
    assert!(rejected.stderr.contains("page"), "{}", rejected.stderr);

    let output = Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(["app", "get", "x"])
        .env_remove("EDGE_API_URL")
        .env_remove("EDGE_ACCESS_KEY")
        .output()
        .await
        .expect("runs");
    assert_eq!(output.status.code(), Some(1), "2 is reserved for a plan's changes");
    assert!(String::from_utf8_lossy(&output.stderr).contains("EDGE_API_URL"));

    for (args, words) in [
        (
            &["--help"][..],
            &[
                "events",
                "rate-limits",
                "access-lists",
                "app",
                "logs",
                "cert",
                "--api-url",
                "--access-key-file",
                "--bearer-token-file",
                "--output",
            ][..],
        ),
        (
            &["events", "search", "--help"],
            &[
                "--zone",
                "--since",
                "--from",
                "--to",
                "--query",
                "--filter",
                "--group-by",
                "--buckets",
                "--page-size",
            ],
        ),
        (
            &["logs", "--help"],
            &[
                "--pull-zone",
                "--since",
                "--status",
                "--cache-status",
                "--follow",
                "--limit",
                "--day",
            ],
        ),
        (
            &["access-lists", "set", "--help"],
            &[
                "--zone",
                "--configuration",
                "--name",
                "--enabled",
                "--action",
                "--dry-run",
            ],
        ),
        (&["cert", "complete", "--help"], &["--hostname"]),
        (&["rate-limits", "list", "--help"], &["--zone"]),
        (&["access-lists", "list", "--help"], &["--zone"]),
        (&["app", "get", "--help"], &["Application id"]),
    ] {
        let run = edgectl(&base, args).await;
        assert_eq!(run.code, 0, "{args:?}");
        for word in words {
            assert!(run.stdout.contains(word), "{args:?} help lacks {word}:\n{}", run.stdout);
        }
        assert!(
            !run.stdout.contains(ACCESS_KEY),
            "the key from the environment is not shown"
        );
    }
}

#[tokio::test]
async fn logs_of_a_day_file_and_with_a_bearer_token() {
    let sim = start(live_fixtures()).await;
    let base = sim.base_url();
    let now = chrono::Utc::now();
    let entries: Vec<Value> = [(200, "HIT"), (503, "MISS"), (404, "MISS")]
        .iter()
        .enumerate()
        .map(|(i, (status, cache))| {
            json!({"timestamp": now - chrono::Duration::seconds(i as i64 + 1), "requestId": format!("req-{i}"),
                   "statusCode": status, "cacheStatus": cache, "url": format!("https://cdn.example.com/day/{i}")})
        })
        .collect();
    let seeded = http()
        .post(format!("{base}/_sim/pullzones/501/logs"))
        .json(&entries)
        .send()
        .await
        .expect("seed");
    assert!(seeded.status().is_success());
    let day = now.format("%m-%d-%y").to_string();
    let errors = edgectl(
        &base,
        &["logs", "--pull-zone", "501", "--day", &day, "--status", "4xx,5xx"],
    )
    .await;
    assert_eq!(errors.code, 0, "{}", errors.stderr);
    assert!(errors.stdout.starts_with("TIME"), "{}", errors.stdout);
    assert_eq!(errors.stdout.lines().count(), 3, "{}", errors.stdout);
    let misses = edgectl(
        &base,
        &[
            "logs",
            "--pull-zone",
            "501",
            "--day",
            &day,
            "--cache-status",
            "hit",
            "-o",
            "json",
        ],
    )
    .await;
    let entry: Value = serde_json::from_str(&misses.stdout).expect("one JSON entry");
    assert_eq!(entry["url"], "https://cdn.example.com/day/0");
    assert!(
        sim.sim.journal().iter().any(|e| e.path == format!("/{day}/501.log")),
        "the v1 file was read"
    );
    let bad_day = edgectl(&base, &["logs", "--pull-zone", "501", "--day", "2026-11-20"]).await;
    assert_eq!(bad_day.code, 1);
    assert!(bad_day.stderr.contains("MM-dd-yy"), "{}", bad_day.stderr);

    let token = bearer_token(JWT_SECRET, now + chrono::Duration::hours(1));
    let mut with_token = command(&base, &["logs", "--pull-zone", "501", "--since", "1h"]);
    with_token
        .env_remove("EDGE_ACCESS_KEY")
        .env("EDGE_BEARER_TOKEN", &token);
    let read = run(with_token).await;
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert_eq!(read.stdout.lines().count(), 4, "{}", read.stdout);
    let forged = bearer_token("not-the-secret", now + chrono::Duration::hours(1));
    let forged_file = tempfile::NamedTempFile::new().expect("file");
    std::fs::write(forged_file.path(), format!("{forged}\n")).expect("written");
    let forged_path = forged_file.path().to_str().expect("path");
    let mut refused = command(
        &base,
        &["logs", "--pull-zone", "501", "--bearer-token-file", forged_path],
    );
    refused.env_remove("EDGE_ACCESS_KEY");
    let refused = run(refused).await;
    assert_eq!(refused.code, 1);
    assert!(
        !refused.stderr.contains(&forged) && !refused.stdout.contains(&forged),
        "the token is never printed"
    );
    let mut main_api = command(&base, &["app", "get", "app-shop"]);
    main_api.env_remove("EDGE_ACCESS_KEY").env("EDGE_BEARER_TOKEN", &token);
    let main_api = run(main_api).await;
    assert_eq!(main_api.code, 1, "the main API takes the access key only");
    assert!(main_api.stderr.contains("EDGE_ACCESS_KEY"), "{}", main_api.stderr);
}

#[tokio::test]
async fn rollout_reads_the_kubeconfig_and_context_it_is_given_and_says_which_is_wrong() {
    let missing = edgectl(
        "http://127.0.0.1:9",
        &["rollout", "status", "staged", "--kubeconfig", "/nonexistent/kubeconfig"],
    )
    .await;
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("/nonexistent/kubeconfig"), "{}", missing.stderr);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n\
         users: [{name: u, user: {token: t}}]\ncontexts: [{name: here, context: {cluster: c, user: u}}]\n\
         current-context: here\n",
    )
    .expect("kubeconfig written");
    let path = path.display().to_string();
    let unknown = edgectl(
        "http://127.0.0.1:9",
        &[
            "rollout",
            "status",
            "staged",
            "--kubeconfig",
            &path,
            "--context",
            "elsewhere",
        ],
    )
    .await;
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.stderr.contains("elsewhere"),
        "names the context: {}",
        unknown.stderr
    );
}

#[test]
fn a_reader_that_goes_away_ends_edgectl_quietly_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    // A pipe whose reader is gone before edgectl writes, as `| head -1` leaves it.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(["completion", "bash"])
        .stdout(writer)
        .output()
        .expect("edgectl runs");
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGPIPE),
        "ended by SIGPIPE, as any Unix tool: {:?}",
        output.status
    );
    assert_eq!(String::from_utf8_lossy(&output.stderr), "", "no panic, no message");
}

#[tokio::test]
async fn completion_scripts_load_in_their_shell_and_complete_subcommands() {
    let script = edgectl("http://127.0.0.1:9", &["completion", "bash"]).await;
    assert_eq!(script.code, 0, "{}", script.stderr);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("edgectl.bash");
    std::fs::write(&path, &script.stdout).expect("script written");
    // Loads the script, then asks its function what `edgectl acc<TAB>` completes to.
    let probe = format!(
        "source {} && complete -p edgectl && COMP_WORDS=(edgectl acc) COMP_CWORD=1 COMP_LINE='edgectl acc' \
         COMP_POINT=11 && _edgectl edgectl acc edgectl && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let loaded = run({
        let mut command = Command::new("bash");
        command.args(["--norc", "--noprofile", "-c", &probe]);
        command
    })
    .await;
    assert_eq!(loaded.code, 0, "{}{}", loaded.stdout, loaded.stderr);
    assert!(loaded.stdout.contains("-F _edgectl edgectl"), "{}", loaded.stdout);
    assert!(
        loaded.stdout.lines().any(|line| line == "access-lists"),
        "`acc` completes to access-lists: {}",
        loaded.stdout
    );
    for shell in ["zsh", "fish"] {
        let script = edgectl("http://127.0.0.1:9", &["completion", shell]).await;
        assert_eq!(script.code, 0, "{shell}: {}", script.stderr);
        assert!(script.stdout.contains("edgectl"), "{shell}: {}", script.stdout);
    }
    let unknown = edgectl("http://127.0.0.1:9", &["completion", "tcsh"]).await;
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);
}
