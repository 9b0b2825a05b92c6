//! A Pull Zone's logging budget (30 requests in 10 s, shared by every key): tenant B's
//! ContainerAppWatch summarises its Pull Zone's CDN logs every 10 s; tenant A creates
//! many watches naming B's Pull Zone with a key of its own account, which the platform
//! refuses, each spelling the window its own way (`1h`, `60m`, `3600s`, …), and keeps
//! changing those spellings (new generations). B's summaries must stay on time: each
//! poll within 5 s of when it was due (the operator's on-time tolerance, the rate
//! suite's poll-lag target) and every summary Synced.

use chrono::{DateTime, Utc};
use edge_operator::controller::kinds::ContainerAppWatch;
use edge_operator::sim::document::Account;
use edge_operator::sim::{SimDocument, spawn};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use super::*;
use crate::busy_pull_zone::feed;
use crate::harness::logging_pull_zone;
use crate::poll_quota::{ON_TIME_P99, create_all};

const PULL_ZONE: i64 = 601;
const OWNER_APP: &str = "app-owner";
const OTHER_APP: &str = "app-other";
/// A's key: its account sees its app, not B's Pull Zone.
const OTHER_KEY: &str = "bench-other-tenant-key";
const OTHER_SECRET: &str = "other-tenant-key";
const INTERVAL: Duration = Duration::from_secs(10);
/// New entries on B's Pull Zone: each poll finds some, so each writes its summary.
const LOGS_PER_HOUR: usize = 36_000;
/// One span (1 h, 1.5 h, 2 h) spelled many ways.
const WINDOWS: [&str; 12] = [
    "1h",
    "60m",
    "3600s",
    "1h0m",
    "1h0m0s",
    "3600000ms",
    "2h",
    "120m",
    "7200s",
    "90m",
    "1.5h",
    "5400s",
];

fn document() -> SimDocument {
    let mut document = logging_pull_zone(PULL_ZONE, [OWNER_APP.to_string(), OTHER_APP.to_string()]);
    document.accounts.push(Account {
        name: "other-tenant".to_string(),
        access_keys: vec![OTHER_KEY.to_string()],
        apps: vec![OTHER_APP.to_string()],
        ..Account::default()
    });
    document
}

/// A watch of B's Pull Zone every [`INTERVAL`], with the key of `key_secret` (the
/// operator's own when none).
fn watch(
    name: &str,
    (app, window): (&str, &str),
    labels: &std::collections::BTreeMap<String, String>,
    key_secret: Option<&str>,
) -> anyhow::Result<ContainerAppWatch> {
    let mut spec = json!({
        "appId": app,
        "interval": humantime::format_duration(INTERVAL).to_string(),
        "cdn": {"pullZoneId": PULL_ZONE, "window": window},
    });
    if let Some(secret) = key_secret {
        spec["accessKeySecretRef"] = json!({"name": secret, "key": "accessKey"});
    }
    serde_json::from_value(json!({
        "apiVersion": "edgeplatform.io/v1alpha1",
        "kind": "ContainerAppWatch",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }))
    .context("building a ContainerAppWatch")
}

/// One of B's summaries, as its status said it.
struct Summary {
    /// The poll's time.
    to: DateTime<Utc>,
    /// CdnLogsSynced said Synced and Synced did not say PolledLate.
    on_time: bool,
}

fn reason<'a>(object: &'a ContainerAppWatch, type_: &str) -> &'a str {
    object
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .map_or("", |c| c.reason.as_str())
}

/// The first `count` summaries of the watch `name`, each as its poll wrote it, seen by a
/// watch within `within`.
async fn summaries(
    api: Api<ContainerAppWatch>,
    name: &str,
    count: usize,
    within: Duration,
) -> anyhow::Result<Vec<Summary>> {
    let deadline = tokio::time::Instant::now() + within;
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let stream = watcher(api, config).default_backoff().applied_objects();
    let mut stream = std::pin::pin!(stream);
    let (mut seen, mut last_observed) = (Vec::new(), None);
    while seen.len() < count {
        let Ok(next) = tokio::time::timeout_at(deadline, stream.next()).await else {
            anyhow::bail!("{} of {count} summaries of {name} within {within:?}", seen.len());
        };
        let object = next.context("the watch ended")??;
        let Some(status) = &object.status else { continue };
        let (Some(cdn), Some(observed)) = (&status.cdn, &status.observed_at) else {
            continue;
        };
        if last_observed.as_ref() == Some(observed) {
            continue;
        }
        last_observed = Some(observed.clone());
        seen.push(Summary {
            to: cdn
                .to
                .parse()
                .with_context(|| format!("`{}` is not RFC 3339", cdn.to))?,
            on_time: reason(&object, "CdnLogsSynced") == "Synced" && reason(&object, "Synced") != "PolledLate",
        });
    }
    Ok(seen)
}

pub(super) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    let (watches, polls) = (settings.tenant_watches, settings.tenant_polls);
    let sim = spawn(document()).await?;
    let feeder = feed(sim.sim.clone(), PULL_ZONE, LOGS_PER_HOUR);
    let tenants = cluster
        .tenants::<ContainerAppWatch, ContainerAppWatch>(&sim.base_url(), ["budget-other", "budget-owner"], &[])
        .await?;
    let (mut operator, labels) = (tenants.operator, tenants.labels);
    let ((other, other_api), (owner, owner_api)) = (tenants.first, tenants.second);
    let mut secret = Secret::default();
    secret.metadata.name = Some(OTHER_SECRET.to_string());
    secret.string_data = Some([("accessKey".to_string(), OTHER_KEY.to_string())].into());
    Api::<Secret>::namespaced(cluster.client.clone(), &other)
        .create(&PostParams::default(), &secret)
        .await
        .context("creating A's key Secret")?;
    let names: Vec<String> = (0..watches).map(|i| format!("other-{i:04}")).collect();
    let window = |i: usize| WINDOWS[i % WINDOWS.len()];
    let others = names.iter().enumerate();
    create_all(
        &other_api,
        others.map(|(i, name)| watch(name, (OTHER_APP, window(i)), &labels, Some(OTHER_SECRET))),
    )
    .await
    .context("creating A's watches")?;
    // Each of A's watches gets a new window spelling (and generation) every 10 s.
    let bumps = EverySecond::start(other_api, names, watches.div_ceil(10), move |n| {
        let window = WINDOWS[(n % watches + n / watches + 1) % WINDOWS.len()];
        json!({"spec": {"cdn": {"window": window}}})
    });
    let created = Utc::now();
    owner_api
        .create(
            &PostParams::default(),
            &watch("owner", (OWNER_APP, "1h"), &labels, None)?,
        )
        .await
        .context("creating B's watch")?;
    // The first poll at once, the second on the watch's phase, then `polls` intervals.
    let count = polls + 2;
    let seen = summaries(owner_api, "owner", count, INTERVAL * (count as u32 + 2)).await;
    let bumped = bumps.stop().await?;
    feeder.abort();
    let seen = seen?;
    operator.ensure_running()?;
    drop(operator);
    let refusals = sim
        .sim
        .journal()
        .iter()
        .filter(|e| e.path.starts_with(&format!("/v2/pullzones/{PULL_ZONE}/")) && e.status == 403)
        .count();
    let first = (seen[0].to - created).to_std().unwrap_or_default();
    let late = seen[1..]
        .windows(2)
        .map(|pair| {
            (pair[1].to - pair[0].to)
                .to_std()
                .unwrap_or_default()
                .saturating_sub(INTERVAL)
        })
        .chain([first])
        .max()
        .unwrap_or_default();
    let not_on_time = seen[1..].iter().filter(|s| !s.on_time).count();
    report.check(
        SUITE,
        &format!(
            "CDN budget: {watches} watches of namespace A on B's Pull Zone with a key that cannot read it, \
             {} window spellings, {bumped} generations bumped: B's summaries every {}, latest poll beyond \
             its due time (first poll: after creation) over {count} polls",
            WINDOWS.len(),
            humantime::format_duration(INTERVAL)
        ),
        format!(
            "{:.1} s (first {:.1} s; {not_on_time} not Synced on time; A's logging requests refused: {refusals})",
            late.as_secs_f64(),
            first.as_secs_f64()
        ),
        &format!(
            "<= {} s, every summary after the first Synced on time",
            ON_TIME_P99.as_secs()
        ),
        late <= ON_TIME_P99 && not_on_time == 0,
    );
    delete_namespaces(cluster, &[&other, &owner], Duration::from_secs(120)).await
}
