//! `edge-sim record` and `edge-sim parity` against real servers on 127.0.0.1: an https
//! upstream with a private CA (a second edge-sim with other fixtures), a server that
//! answers one member in another form, and the committed recording of the platform's
//! published answers; `--state-file` across a kill -9.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use axum::Json;
use edge_operator::api::{Transport, TrustedRoots};
use edge_operator::sim::recording::proxy::{Recorder, record};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use crate::support::sim::{ACCESS_KEY, example_fixtures, http, journal_count, start};
use crate::support::tls::{PrivateCa, https_sim};

/// A recorder in front of `upstream`, trusting `ca_pem`, recording into `out`.
struct RunningRecorder {
    base: String,
    stop: oneshot::Sender<()>,
    done: tokio::task::JoinHandle<()>,
}

async fn start_recorder(upstream: &str, ca_pem: Option<&str>, key_file: &Path, out: &Path) -> RunningRecorder {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("recorder binds");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let mut transport = Transport::default();
    if let Some(pem) = ca_pem {
        transport.roots = TrustedRoots {
            extra_pem: pem.as_bytes().to_vec(),
            extra_only: true,
        };
    }
    let recorder = Recorder {
        upstream: upstream.parse().expect("upstream URL"),
        logging_upstream: upstream.parse().expect("upstream URL"),
        key: edge_operator::api::SecretFile::open(key_file.to_path_buf(), "access key").expect("key file"),
        out: out.to_path_buf(),
        transport,
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        record(recorder, listener, async move {
            let _ = stopped.await;
        })
        .await
        .expect("the recorder runs");
    });
    RunningRecorder { base, stop, done }
}

impl RunningRecorder {
    /// Stops the recorder; the fixtures are written when this returns.
    async fn finish(self) {
        let _ = self.stop.send(());
        self.done.await.expect("recorder stops");
    }
}

fn key_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("access-key");
    std::fs::write(&path, format!("{ACCESS_KEY}\n")).expect("key file");
    path
}

struct Parity {
    code: Option<i32>,
    report: String,
}

async fn parity(dir: &Path) -> Parity {
    let output = Command::new(env!("CARGO_BIN_EXE_edge-sim"))
        .arg("parity")
        .arg(dir)
        .output()
        .await
        .expect("edge-sim parity runs");
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        !report.is_empty(),
        "no report: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Parity {
        code: output.status.code(),
        report,
    }
}

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            let bytes = std::fs::read(&path).expect("readable");
            found.push((path, bytes));
        }
    }
    found
}

#[tokio::test]
async fn an_https_account_recorded_through_the_proxy_replays_identically_and_no_write_reaches_it() {
    let ca = PrivateCa::new("recording test CA");
    let upstream = https_sim(example_fixtures(), &ca.server(&["127.0.0.1"])).await;
    upstream.sim.generate(300, 300, 7).expect("events and logs");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("recording");
    let recorder = start_recorder(&upstream.base_url(), Some(&ca.pem), &key_file(dir.path()), &out).await;
    let base = recorder.base.clone();
    let client = http();
    let now = chrono::Utc::now();
    let day = now.format("%m-%d-%y");
    let reads = [
        client.get(format!("{base}/shield/shield-zone/1001/access-lists")),
        client.get(format!("{base}/shield/shield-zone/1002/access-lists")),
        client.get(format!("{base}/shield/rate-limits/1001?page=1&perPage=1")),
        client.get(format!("{base}/shield/rate-limits/1001?page=2&perPage=1")),
        client.get(format!("{base}/mc/apps/app-shop")),
        client.get(format!("{base}/mc/apps/app-missing")),
        client
            .post(format!("{base}/shield/event-logs/1001/search"))
            .json(&json!({"from": (now - chrono::Duration::hours(30)).timestamp_millis(), "to": now.timestamp_millis(), "pageSize": 500})),
        client.get(format!("{base}/v2/pullzones/501/logs?limit=1000")),
        client.get(format!("{base}/{day}/501.log")),
    ];
    for read in reads {
        let answer = read
            .header("AccessKey", "a-key-the-recorder-must-not-forward")
            .send()
            .await
            .expect("answer");
        assert_ne!(answer.status().as_u16(), 502, "{:?}", answer.text().await);
    }
    let patch = client
        .patch(format!(
            "{base}/shield/shield-zone/1001/access-lists/configurations/9101"
        ))
        .json(&json!({"isEnabled": true}))
        .send()
        .await
        .expect("answer");
    assert_eq!(patch.status().as_u16(), 405);
    let refusal = patch.text().await.expect("body");
    assert!(refusal.contains("forwards only reads"), "{refusal}");
    let completion = client
        .post(format!("{base}/pullzone/completeExternalHttpCertificate"))
        .json(&json!({"Hostname": "shop.example.com"}))
        .send()
        .await
        .expect("answer");
    assert_eq!(completion.status().as_u16(), 405);
    recorder.finish().await;

    assert_eq!(
        journal_count(&upstream, "PATCH", ""),
        0,
        "no write reached the upstream"
    );
    assert_eq!(
        journal_count(&upstream, "POST", "/pullzone/"),
        0,
        "no write reached the upstream"
    );
    assert_eq!(
        journal_count(&upstream, "GET", ""),
        8,
        "every read went through, with the recorder's key"
    );

    let recorded = files(&out);
    let bytes: usize = recorded.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(
        recorded
            .iter()
            .filter(|(p, _)| p.extension().is_some_and(|e| e == "json"))
            .count(),
        10,
        "9 exchanges and the data"
    );
    for (path, content) in &recorded {
        let text = String::from_utf8_lossy(content);
        for secret in [ACCESS_KEY, "a-key-the-recorder-must-not-forward"] {
            assert!(!text.contains(secret), "{} holds a key", path.display());
        }
    }

    let started = Instant::now();
    let report = parity(&out).await;
    eprintln!(
        "recording: 9 exchanges, {} files, {bytes} bytes; parity in {} ms:\n{}",
        recorded.len(),
        started.elapsed().as_millis(),
        report.report
    );
    assert_eq!(report.code, Some(0), "{}", report.report);
    assert!(!report.report.contains("differ"), "{}", report.report);
    assert!(
        report.report.contains("replayed 9 exchanges of 6 operations"),
        "{}",
        report.report
    );
}

#[tokio::test]
async fn a_member_answered_in_another_form_is_reported_at_its_path_and_fails() {
    let reference = start(example_fixtures()).await;
    let mut app = read_json(&format!("{}/mc/apps/app-shop", reference.base_url())).await;
    app["runtimeType"] = json!("Shared");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let upstream = format!("http://{}", listener.local_addr().expect("address"));
    let server = tokio::spawn(async move {
        let router = axum::Router::new().route("/mc/apps/{id}", axum::routing::get(move || async move { Json(app) }));
        axum::serve(listener, router).await.expect("serves");
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("recording");
    let recorder = start_recorder(&upstream, None, &key_file(dir.path()), &out).await;
    let answer = http()
        .get(format!("{}/mc/apps/app-shop", recorder.base))
        .send()
        .await
        .expect("answer");
    assert_eq!(answer.status().as_u16(), 200);
    recorder.finish().await;
    server.abort();

    let report = parity(&out).await;
    eprintln!("{}", report.report);
    assert_eq!(report.code, Some(1), "{}", report.report);
    assert!(
        report
            .report
            .contains("$.runtimeType: \"Shared\" recorded, \"shared\" from edge-sim"),
        "{}",
        report.report
    );
    assert!(report.report.contains("1 of 1 differ"), "{}", report.report);
}

#[tokio::test]
async fn the_published_answers_replay_identically_and_the_docs_table_is_their_report() {
    let repo = crate::support::cluster::repo_root();
    let report = parity(&repo.join("tests/recordings/published")).await;
    assert_eq!(report.code, Some(0), "{}", report.report);
    let table = Command::new(env!("CARGO_BIN_EXE_edge-sim"))
        .args(["parity", "--format", "markdown"])
        .arg(repo.join("tests/recordings/published"))
        .output()
        .await
        .expect("runs");
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let docs = std::fs::read_to_string(repo.join("docs/emulator.md")).expect("docs/emulator.md");
    assert!(
        docs.contains(&table),
        "docs/emulator.md's parity table is not the report of tests/recordings/published; run `make parity-docs`"
    );
}

/// `edge-sim` serving `args` on a free port; the base URL once it is ready.
async fn serve(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_edge-sim"))
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .args(args)
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("edge-sim starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.expect("log line") {
            let entry: Value = serde_json::from_str(&line).unwrap_or_default();
            if let Some(listen) = entry.pointer("/fields/listen").and_then(Value::as_str) {
                return format!("http://{listen}");
            }
        }
        panic!("edge-sim stopped before it was ready")
    })
    .await
    .expect("edge-sim is ready within 30 s");
    (child, ready)
}

/// The JSON answer of a GET of `url` with the example key.
async fn read_json(url: &str) -> Value {
    http()
        .get(url)
        .header("AccessKey", ACCESS_KEY)
        .send()
        .await
        .expect("answer")
        .json()
        .await
        .expect("JSON")
}

async fn configuration_enabled(base: &str, configuration: i64) -> Option<bool> {
    let lists = read_json(&format!("{base}/shield/shield-zone/1001/access-lists")).await;
    ["managedLists", "customLists"]
        .iter()
        .flat_map(|member| lists[member].as_array().cloned().unwrap_or_default())
        .find(|list| list["configurationId"] == configuration)
        .and_then(|list| list["isEnabled"].as_bool())
}

#[tokio::test]
async fn the_state_file_survives_a_kill_9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state.json");
    let fixtures = crate::support::cluster::repo_root().join("examples/edge-sim-fixtures.yaml");
    let args = [
        "--fixtures",
        fixtures.to_str().expect("UTF-8 path"),
        "--state-file",
        state.to_str().expect("UTF-8 path"),
    ];
    let (mut first, base) = serve(&args).await;
    assert_eq!(configuration_enabled(&base, 9101).await, Some(false));
    let patched = http()
        .patch(format!(
            "{base}/shield/shield-zone/1001/access-lists/configurations/9101"
        ))
        .header("AccessKey", ACCESS_KEY)
        .json(&json!({"isEnabled": true}))
        .send()
        .await
        .expect("answer");
    assert_eq!(patched.status().as_u16(), 200);

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let written = std::fs::read(&state)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
        let list = written.as_ref().and_then(|document| {
            document["shieldZones"][0]["accessLists"]
                .as_array()?
                .iter()
                .find(|list| list["configurationId"] == 9101)
                .cloned()
        });
        if list.is_some_and(|list| list["isEnabled"] == true) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the change was not written to the state file within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.start_kill().expect("SIGKILL");
    first.wait().await.expect("killed");

    let (_second, base) = serve(&args).await;
    assert_eq!(
        configuration_enabled(&base, 9101).await,
        Some(true),
        "the restarted emulator kept the change"
    );
}

#[tokio::test]
async fn the_recorder_follows_no_redirect_and_sends_the_key_over_plain_http_to_loopback_only() {
    use crate::support::hostile_server::{Elsewhere, elsewhere, hostile, serve};
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    let seen = Arc::new(Elsewhere::default());
    let other_host = serve(axum::Router::new().fallback(elsewhere).with_state(seen.clone())).await;
    let base = serve(hostile(other_host.replace("127.0.0.1", "localhost"))).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let key = key_file(dir.path());
    for behaviour in ["redirect-302-other", "redirect-307-other"] {
        let out = dir.path().join(behaviour);
        let recorder = start_recorder(&format!("{base}/{behaviour}"), None, &key, &out).await;
        let answer = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client")
            .get(format!("{}/mc/apps/app-shop", recorder.base))
            .send()
            .await
            .expect("the recorder answers");
        assert!(
            answer.status().is_redirection(),
            "{behaviour}: passed on as it came: {}",
            answer.status()
        );
        recorder.finish().await;
    }
    assert_eq!(
        seen.requests.load(Ordering::SeqCst),
        0,
        "the host a redirect names hears nothing"
    );

    for upstream in ["http://platform.example.com", "http://10.0.0.8:8080"] {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let recorder = Recorder {
            upstream: upstream.parse().expect("URL"),
            logging_upstream: "https://logging.example.com".parse().expect("URL"),
            key: edge_operator::api::SecretFile::open(key.clone(), "access key").expect("key file"),
            out: dir.path().join("plain"),
            transport: Transport::default(),
        };
        let refused = record(recorder, listener, async {}).await.expect_err("refused");
        assert!(refused.to_string().contains("clear text"), "{upstream}: {refused}");
    }
}

/// The numbered exchange files of a recording, in order.
fn exchange_files(out: &Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(out.join("exchanges"))
        .expect("exchanges")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

fn rewrite(path: &Path, change: impl FnOnce(&mut Value)) {
    let mut exchange: Value = serde_json::from_slice(&std::fs::read(path).expect("exchange")).expect("JSON");
    change(&mut exchange);
    std::fs::write(path, serde_json::to_vec_pretty(&exchange).expect("JSON")).expect("written");
}

#[tokio::test]
async fn grouped_searches_recorded_through_the_proxy_replay_identically() {
    let ca = PrivateCa::new("grouped recording CA");
    let upstream = https_sim(example_fixtures(), &ca.server(&["127.0.0.1"])).await;
    let generated = upstream.sim.generate(4_000, 0, 11).expect("events");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("recording");
    let recorder = start_recorder(&upstream.base_url(), Some(&ca.pem), &key_file(dir.path()), &out).await;
    let now = chrono::Utc::now();
    let window = json!({"from": (now - chrono::Duration::hours(71)).timestamp_millis(), "to": now.timestamp_millis()});
    let grouped = |group_by: Value, buckets: i64, filters: Value| {
        let mut body = window.clone();
        body["groupBy"] = group_by;
        body["buckets"] = json!(buckets);
        body["filters"] = filters;
        body
    };
    let searches = [
        grouped(json!(["country"]), 24, Value::Null),
        grouped(json!(["ruleId", "ip"]), 100, Value::Null),
        grouped(
            json!(["asn"]),
            0,
            json!([{"field": "action", "op": "in", "value": ["block", "challenge"]}]),
        ),
    ];
    for search in &searches {
        let answer = http()
            .post(format!("{}/shield/event-logs/1001/search", recorder.base))
            .json(search)
            .send()
            .await
            .expect("answer");
        assert_eq!(answer.status().as_u16(), 200);
    }
    recorder.finish().await;
    let flat_pages = journal_count(&upstream, "POST", "/shield/event-logs/") - searches.len();
    let recorded = files(&out);
    let bytes: usize = recorded.iter().map(|(_, b)| b.len()).sum();
    let report = parity(&out).await;
    eprintln!(
        "recording of {} grouped searches over {generated:?}: {flat_pages} flat pages read, {} files, {bytes} bytes\n{}",
        searches.len(),
        recorded.len(),
        report.report
    );
    assert_eq!(report.code, Some(0), "{}", report.report);
    assert!(
        report.report.contains("POST /shield/event-logs/{shieldZoneId}/search"),
        "{}",
        report.report
    );
    assert!(!report.report.contains("compared by type"), "{}", report.report);
    assert_eq!(
        exchange_files(&out).len(),
        searches.len(),
        "the flat pages are data, not exchanges"
    );
    let first = exchange_files(&out)[0].clone();
    let summarised: Value = serde_json::from_slice(&std::fs::read(&first).expect("exchange")).expect("JSON");
    let events = summarised["summarised"]["events"].as_u64().expect("events summarised");
    assert!(events > 1_000, "the window holds thousands of events: {summarised:#}");
    assert_eq!(summarised["summarised"]["read"].as_u64(), Some(events));

    rewrite(&first, |exchange| {
        let count = exchange["response"]["body"]["groups"][0]["count"]
            .as_i64()
            .expect("count");
        exchange["response"]["body"]["groups"][0]["count"] = json!(count + 1);
    });
    let changed = parity(&out).await;
    assert_eq!(changed.code, Some(1), "{}", changed.report);
    assert!(
        changed.report.contains("$.groups[0].count: "),
        "the changed count is named: {}",
        changed.report
    );

    rewrite(&first, |exchange| {
        exchange["summarised"]["read"] = json!(events - 1);
    });
    let in_part = parity(&out).await;
    assert_eq!(in_part.code, Some(0), "{}", in_part.report);
    assert!(
        in_part
            .report
            .contains("(1 compared by type only: the recording did not read every event they summarised)"),
        "{}",
        in_part.report
    );
}
