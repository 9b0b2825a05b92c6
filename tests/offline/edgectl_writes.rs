//! `edgectl`'s writes against a real edge-sim: `access-lists set` patches only what
//! differs, `cert complete` reports each error class, keys come from files or the
//! environment, never from arguments.

use crate::edgectl::{command, edgectl, live_fixtures, run};
use crate::support::sim::{ACCESS_KEY, fixtures_at, start};
use serde_json::{Value, json};

fn patches(sim: &edge_operator::sim::RunningSim) -> usize {
    sim.sim.journal().iter().filter(|e| e.method == "PATCH").count()
}

#[tokio::test]
async fn access_lists_set_shows_before_and_after_and_patches_only_what_differs() {
    let sim = start(live_fixtures()).await;
    let base = sim.base_url();
    let by_name = ["access-lists", "set", "--zone", "1001", "--name", "Known bad actors"];
    let dry = edgectl(&base, &[&by_name[..], &["--enabled", "true", "--dry-run"]].concat()).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(dry.stdout.contains("isEnabled  false   true"), "{}", dry.stdout);
    assert!(dry.stdout.ends_with("dry run: nothing was sent\n"), "{}", dry.stdout);
    assert_eq!(patches(&sim), 0, "a dry run sends no PATCH");

    let applied = edgectl(
        &base,
        &[&by_name[..], &["--enabled", "true", "--action", "block"]].concat(),
    )
    .await;
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    assert!(applied.stdout.ends_with("applied\n"), "{}", applied.stdout);
    assert_eq!(patches(&sim), 1);
    let again = edgectl(&base, &[&by_name[..], &["--enabled", "true"]].concat()).await;
    assert!(
        again.stdout.ends_with("no change: nothing was sent\n"),
        "{}",
        again.stdout
    );
    assert_eq!(patches(&sim), 1, "nothing differs, nothing is sent");

    let json = edgectl(
        &base,
        &[
            "access-lists",
            "set",
            "--zone",
            "1001",
            "--configuration",
            "9101",
            "--action",
            "3",
            "-o",
            "json",
        ],
    )
    .await;
    let change: Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(change["before"], json!({"isEnabled": true, "action": 2}));
    assert_eq!(change["after"], json!({"isEnabled": true, "action": 3}));
    assert_eq!(
        (change["applied"].clone(), change["configurationId"].clone()),
        (json!(true), json!(9101))
    );

    for (args, code, words) in [
        (
            &[
                "access-lists",
                "set",
                "--zone",
                "1001",
                "--name",
                "nope",
                "--enabled",
                "true",
            ][..],
            1,
            "no access list is named",
        ),
        (
            &["access-lists", "set", "--zone", "1001", "--configuration", "9101"],
            1,
            "nothing to set",
        ),
        (
            &[
                "access-lists",
                "set",
                "--zone",
                "1001",
                "--configuration",
                "9101",
                "--action",
                "deny",
            ],
            1,
            "action `deny`",
        ),
        (
            &["access-lists", "set", "--zone", "1001", "--enabled", "true"],
            1,
            "--configuration",
        ),
    ] {
        let run = edgectl(&base, args).await;
        assert_eq!(run.code, code, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(words), "{args:?}: {}", run.stderr);
    }
    assert_eq!(patches(&sim), 2);
}

#[tokio::test]
async fn cert_complete_reports_an_outcome_per_error_class() {
    let sim = start(live_fixtures()).await;
    let base = sim.base_url();
    let issued = edgectl(&base, &["cert", "complete", "--hostname", "shop.example.com"]).await;
    assert_eq!(issued.code, 0, "{}", issued.stderr);
    assert!(
        issued.stdout.starts_with("Issued: certificate issued"),
        "{}",
        issued.stdout
    );
    for (hostname, outcome, retryable) in [
        ("new.example.com", "VerificationFailed", true),
        ("nowhere.example.com", "HostnameNotFound", false),
    ] {
        let run = edgectl(&base, &["cert", "complete", "--hostname", hostname]).await;
        assert_eq!(run.code, 1, "{hostname}");
        assert!(
            run.stderr.starts_with(&format!("edgectl: {outcome}: ")),
            "{}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1);
        let json = edgectl(&base, &["cert", "complete", "--hostname", hostname, "-o", "json"]).await;
        let parsed: Value = serde_json::from_str(&json.stdout).expect("JSON");
        assert_eq!(
            (parsed["outcome"].as_str(), parsed["retryable"].as_bool()),
            (Some(outcome), Some(retryable))
        );
        assert_eq!(json.code, 1);
    }
    let mut wrong_key = command(&base, &["cert", "complete", "--hostname", "shop.example.com"]);
    wrong_key.env("EDGE_ACCESS_KEY", "wrong-key");
    let refused = run(wrong_key).await;
    assert!(
        refused.stderr.starts_with("edgectl: Unauthorized: "),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains("wrong-key"));
}

#[tokio::test]
async fn secrets_come_from_files_or_the_environment_never_from_arguments() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    for flag in ["--access-key", "--bearer-token"] {
        let refused = edgectl(&base, &["app", "get", "app-shop", flag, "typed-secret"]).await;
        assert_eq!(refused.code, 1, "{flag}");
        assert!(
            refused.stderr.contains("process lists") && refused.stderr.contains(&format!("{flag}-file")),
            "{flag}: {}",
            refused.stderr
        );
        assert!(!refused.stderr.contains("typed-secret"), "{}", refused.stderr);
    }
    let key_file = tempfile::NamedTempFile::new().expect("file");
    std::fs::write(key_file.path(), format!("{ACCESS_KEY}\n")).expect("written");
    let mut from_file = command(
        &base,
        &[
            "app",
            "get",
            "app-shop",
            "--access-key-file",
            key_file.path().to_str().expect("path"),
        ],
    );
    from_file.env_remove("EDGE_ACCESS_KEY");
    let read = run(from_file).await;
    assert_eq!(read.code, 0, "{}", read.stderr);
    let missing = edgectl(
        &base,
        &["app", "get", "app-shop", "--access-key-file", "/nonexistent/key"],
    )
    .await;
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("--access-key-file /nonexistent/key"),
        "{}",
        missing.stderr
    );
}
