//! Operator benchmark at scale: convergence of N AccessListConfigs spread over 20
//! Shield Zones, against its floor (the same creates, status writes and PATCHes done by
//! a bare client), platform calls and status writes per object, and operator memory.
//!
//! Run through `hack/bench/operator.sh`, which builds the release binaries and starts a
//! local control plane. Environment: KUBECONFIG, EDGE_BENCH_OBJECTS (default 1000),
//! EDGE_BENCH_OPERATOR (path of the release edge-operator), EDGE_BENCH_AUDIT_LOG.

use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use edge_operator::api::models::shield::{AccessListConfigurationPatch, AccessListItem};
use edge_operator::api::{ClientConfig, Credentials, EdgeClient, RetryPolicy, Secret};
use edge_operator::crd::access_list_config::{
    AccessListConfig, AccessListConfigSpec, DeletionPolicy, ManagementPolicy,
};
use edge_operator::sim::state::{ShieldZone, SimAccessList};
use edge_operator::sim::{SimDocument, spawn};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};

const ZONES: i64 = 20;
const ACCESS_KEY: &str = "bench-access-key";
const CONVERGENCE_TARGET: Duration = Duration::from_secs(10);
const RATIO_TARGET: f64 = 1.5;
const CALLS_PER_OBJECT_TARGET: f64 = 1.05;
const STATUS_WRITES_PER_OBJECT_TARGET: f64 = 1.1;
const MEMORY_TARGET_MB: f64 = 40.0;

fn document(objects: usize) -> SimDocument {
    let per_zone = (objects as i64 + ZONES - 1) / ZONES;
    SimDocument {
        access_keys: vec![ACCESS_KEY.to_string()],
        shield_zones: (1..=ZONES)
            .map(|zone| ShieldZone {
                id: zone,
                pull_zone_id: None,
                access_lists: (0..per_zone)
                    .map(|i| SimAccessList {
                        item: AccessListItem {
                            list_id: zone * 10_000 + i,
                            configuration_id: zone * 100_000 + i,
                            name: format!("list-{i}"),
                            ..AccessListItem::default()
                        },
                        managed: false,
                    })
                    .collect(),
                rate_limits: Vec::new(),
            })
            .collect(),
        ..SimDocument::default()
    }
}

fn object(index: usize, namespace: &str) -> AccessListConfig {
    let zone = 1 + (index as i64 % ZONES);
    let mut object = AccessListConfig::new(
        &format!("alc-{index:05}"),
        AccessListConfigSpec {
            shield_zone_id: zone,
            configuration_id: Some(zone * 100_000 + index as i64 / ZONES),
            list_name: None,
            enabled: true,
            action: None,
            management_policy: ManagementPolicy::Manage,
            deletion_policy: DeletionPolicy::Orphan,
            access_key_secret_ref: None,
        },
    );
    object.metadata.namespace = Some(namespace.to_string());
    object
}

async fn create_all(api: &Api<AccessListConfig>, namespace: &str, objects: usize) -> Result<(), kube::Error> {
    stream::iter(0..objects)
        .map(|i| async move {
            api.create(&PostParams::default(), &object(i, namespace))
                .await
                .map(drop)
        })
        .buffer_unordered(32)
        .try_collect()
        .await
}

async fn count_ready(api: &Api<AccessListConfig>) -> Result<usize, kube::Error> {
    let list = api.list(&Default::default()).await?;
    Ok(list
        .items
        .iter()
        .filter(|o| {
            o.status
                .as_ref()
                .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Ready" && c.reason == "InSync"))
        })
        .count())
}

async fn namespace(client: &Client, name: &str) -> Result<Api<AccessListConfig>, kube::Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).map_err(kube::Error::SerdeError)?;
    namespaces.create(&PostParams::default(), &ns).await?;
    Ok(Api::namespaced(client.clone(), name))
}

/// The floor: what any implementation must do, done by a bare client.
async fn floor(client: &Client, platform: &EdgeClient, objects: usize, run: &str) -> Result<Duration, kube::Error> {
    let api = namespace(client, &format!("bench-floor-{run}")).await?;
    let started = Instant::now();
    let ns = format!("bench-floor-{run}");
    create_all(&api, &ns, objects).await?;
    stream::iter(0..objects)
        .map(|i| {
            let api = api.clone();
            let platform = platform.clone();
            async move {
                let spec = object(i, "").spec;
                let patch = AccessListConfigurationPatch {
                    is_enabled: Some(true),
                    action: None,
                };
                let configuration = spec.configuration_id.unwrap_or_default();
                platform
                    .update_access_list(spec.shield_zone_id, configuration, &patch)
                    .await
                    .map_err(|e| kube::Error::Service(e.to_string().into()))?;
                let status = serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "InSync", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
                api.patch_status(&format!("alc-{i:05}"), &PatchParams::default(), &Patch::Merge(&status)).await.map(drop)
            }
        })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await?;
    Ok(started.elapsed())
}

fn peak_rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn status_writes(audit_log: &str, namespace: &str) -> usize {
    std::fs::read_to_string(audit_log)
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            l.contains(&format!("\"namespace\":\"{namespace}\""))
                && l.contains("\"subresource\":\"status\"")
                && l.contains("\"stage\":\"ResponseComplete\"")
        })
        .count()
}

fn row(name: &str, value: String, target: String, pass: bool) -> bool {
    println!(
        "{name:<44} {value:>14} {target:>12}  {}",
        if pass { "PASS" } else { "FAIL" }
    );
    pass
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("operator benchmark: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let objects: usize = std::env::var("EDGE_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let operator_bin = std::env::var("EDGE_BENCH_OPERATOR")?;
    let audit_log = std::env::var("EDGE_BENCH_AUDIT_LOG").unwrap_or_default();
    let run = format!("{:x}", std::process::id());
    let client = Client::try_default().await?;

    let sim = spawn(document(objects)).await?;
    let mut config = ClientConfig::new(
        sim.base_url(),
        sim.base_url(),
        Credentials::AccessKey(Secret::new(ACCESS_KEY)),
    );
    config.retry = RetryPolicy::none();
    let platform = EdgeClient::new(config)?;
    let floor_time = floor(&client, &platform, objects, &run).await?;
    sim.sim.replace(document(objects));

    let ns = format!("bench-op-{run}");
    let api = namespace(&client, &ns).await?;
    let key_file = std::env::temp_dir().join(format!("edge-bench-key-{run}"));
    std::fs::write(&key_file, ACCESS_KEY)?;
    let mut operator = Command::new(&operator_bin)
        .args([
            "run",
            "--api-url",
            &sim.base_url(),
            "--namespace",
            &ns,
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .args(["--platform-rate", "0", "--concurrency", "32", "--resync", "1h"])
        .arg("--access-key-file")
        .arg(&key_file)
        .stderr(Stdio::null())
        .spawn()?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    sim.sim.clear_journal();

    let started = Instant::now();
    create_all(&api, &ns, objects).await?;
    while count_ready(&api).await? < objects {
        if started.elapsed() > Duration::from_secs(300) {
            return Err("objects did not converge within 5 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let convergence = started.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let calls = sim.sim.journal().len() as f64 / objects as f64;
    let writes = status_writes(&audit_log, &ns) as f64 / objects as f64;
    let memory = peak_rss_mb(operator.id());
    let _ = operator.kill();
    let _ = operator.wait();
    let _ = std::fs::remove_file(&key_file);

    let ratio = convergence.as_secs_f64() / floor_time.as_secs_f64();
    println!("operator benchmark: {objects} AccessListConfigs over {ZONES} Shield Zones");
    println!("{:<44} {:>14} {:>12}  result", "figure", "value", "target");
    let mut ok = true;
    ok &= row(
        "convergence (create -> all Ready)",
        format!("{:.2} s", convergence.as_secs_f64()),
        format!("<= {} s", CONVERGENCE_TARGET.as_secs()),
        convergence <= CONVERGENCE_TARGET,
    );
    ok &= row(
        "floor (creates + status writes + PATCHes)",
        format!("{:.2} s", floor_time.as_secs_f64()),
        "-".into(),
        true,
    );
    ok &= row(
        "convergence / floor",
        format!("{ratio:.2}"),
        format!("<= {RATIO_TARGET}"),
        ratio <= RATIO_TARGET,
    );
    ok &= row(
        "platform calls per object",
        format!("{calls:.3}"),
        format!("<= {CALLS_PER_OBJECT_TARGET}"),
        calls <= CALLS_PER_OBJECT_TARGET,
    );
    let audited = !audit_log.is_empty();
    ok &= row(
        "status writes per object (audit log)",
        if audited {
            format!("{writes:.3}")
        } else {
            "no audit log".into()
        },
        format!("<= {STATUS_WRITES_PER_OBJECT_TARGET}"),
        audited && writes <= STATUS_WRITES_PER_OBJECT_TARGET,
    );
    ok &= row(
        "operator peak RSS",
        format!("{memory:.1} MB"),
        format!("<= {MEMORY_TARGET_MB} MB"),
        memory <= MEMORY_TARGET_MB,
    );
    Ok(ok)
}
