//! AccessListConfigs at scale: convergence against its floor, platform calls and status
//! writes per object, an idle period, and operator memory at two sizes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use edge_operator::api::models::shield::{AccessListItem, AccessListsResponse};
use edge_operator::api::{ClientConfig, Credentials, EdgeClient, RetryPolicy, SecretValue};
use edge_operator::controller::framework::status::time::rfc3339;
use edge_operator::controller::kinds::access_list::{ZONE_LISTS_TTL, converged_status, plan, resolve};
use edge_operator::controller::runtime::{LIST_PAGE_SIZE, NO_OBJECT};
use edge_operator::crd::SecretKeyRef;
use edge_operator::crd::access_list_claim::{
    AccessListClaim, AccessListClaimSpec, ClaimOwner, ClaimProof, PLATFORM_LABEL, claim_name, platform_tag,
};
use edge_operator::crd::access_list_config::{
    AccessListConfig, AccessListConfigSpec, AccessListConfigStatus, DeletionPolicy, ManagementPolicy,
};
use edge_operator::sim::document::{ShieldZone, SimAccessList};
use edge_operator::sim::{RunningSim, SimDocument, spawn};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Secret as KubeSecret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use tokio::task::JoinHandle;

use crate::Settings;
use crate::harness::{ACCESS_KEY, Cluster, OperatorProcess, ready_waiter};
use crate::report::Report;

const SUITE: &str = "operator";
const KIND: &str = "AccessListConfig";
/// The Secret every object reads its access key from.
const KEY_SECRET: &str = "bench-key";
const ZONES: i64 = 20;
/// Creates, PATCHes and status writes in flight at once, for the floor and the creates.
const CLIENT_CONCURRENCY: usize = 32;
/// Convergence below [`SMALL_BELOW`] objects, beside a floor (the two share the
/// machine); from there on its ratio to the floor gates it.
const CONVERGENCE_TARGET: Duration = Duration::from_secs(15);
/// Convergence / the floor beside it, from [`SMALL_BELOW`] objects on: the operator's
/// start-up, watch and reconciles against the least work on the same waiting objects.
/// On 2 cores at 10,000 objects an unchanged operator's medians were 1.05 to 1.07 over
/// five runs, one whose platform writes take 25 ms longer (its convergences 7.9%
/// longer) 1.16 (docs/benchmark.md).
const RATIO_TARGET: f64 = 1.12;
/// Convergence / floor below [`SMALL_BELOW`] objects: they converge in a few seconds,
/// where the operator's start-up and the apiserver's noise weigh more (1.01 to 1.15
/// per round at 1,000 objects).
const SMALL_RATIO_TARGET: f64 = 1.30;
const SMALL_BELOW: usize = 10_000;
const STATUS_WRITES_PER_OBJECT_TARGET: f64 = 1.1;
/// The objects of a zone re-read together: one read per zone and resync.
const IDLE_READS_PER_ZONE_AND_RESYNC_TARGET: f64 = 1.0;
/// Reconciles at idle ask the apiserver nothing (their Secret is cached per
/// resourceVersion); only a watch that ends and starts again makes a request.
const IDLE_APISERVER_REQUESTS_PER_RECONCILE_TARGET: f64 = 0.02;
/// Series the operator exposes, whatever the number of objects: objects are counted,
/// not listed (a series per object is `--object-metrics`).
const SERIES_TARGET: usize = 200;
/// Peak RSS below [`SMALL_BELOW`] objects.
const MEMORY_TARGET_MB: f64 = 32.0;
/// Peak RSS per object from [`SMALL_BELOW`] objects on, the process's own footprint
/// included: 60 MB (MiB, as reported) at 10,000 objects.
const LARGE_BYTES_PER_OBJECT_TARGET: f64 = 60.0 * 1024.0 * 1024.0 / 10_000.0;
/// Floors and convergences measured side by side at each size.
const ROUNDS: usize = 3;
/// Objects created and written before the first round, so that it does not pay for a
/// cold apiserver.
const WARM_UP_OBJECTS: usize = 200;

fn document(objects: usize) -> SimDocument {
    let per_zone = (objects as i64 + ZONES - 1) / ZONES;
    SimDocument {
        access_keys: vec![ACCESS_KEY.to_string()],
        shield_zones: (1..=ZONES)
            .map(|zone| ShieldZone {
                id: zone,
                pull_zone_id: None,
                access_lists: (0..per_zone)
                    .map(|i| SimAccessList::new(zone * 100_000 + i, &format!("list-{i}"), false, 0))
                    .collect(),
                rate_limits: Vec::new(),
                ..ShieldZone::default()
            })
            .collect(),
        ..SimDocument::default()
    }
}

fn spec(index: usize) -> AccessListConfigSpec {
    let zone = 1 + (index as i64 % ZONES);
    AccessListConfigSpec {
        shield_zone_id: zone,
        configuration_id: Some(zone * 100_000 + index as i64 / ZONES),
        list_name: None,
        enabled: true,
        action: None,
        management_policy: ManagementPolicy::Manage,
        deletion_policy: DeletionPolicy::Orphan,
        access_key_secret_ref: Some(SecretKeyRef {
            name: KEY_SECRET.to_string(),
            key: "accessKey".to_string(),
        }),
        rollout: None,
    }
}

fn name(index: usize) -> String {
    format!("alc-{index:05}")
}

fn is_in_sync(object: &AccessListConfig) -> bool {
    object
        .status
        .as_ref()
        .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Ready" && c.reason == "InSync"))
}

async fn create_all(api: &Api<AccessListConfig>, objects: usize) -> anyhow::Result<()> {
    stream::iter(0..objects)
        .map(|i| async move {
            let object = AccessListConfig::new(&name(i), spec(i));
            create_once(api, &object).await
        })
        .buffer_unordered(CLIENT_CONCURRENCY)
        .try_collect()
        .await
        .context("creating AccessListConfigs")
}

/// Attempts at one create when the connection to the apiserver closes under it.
const CREATE_ATTEMPTS: usize = 3;

/// Creates `object`; a connection closed under the request (a pooled connection the
/// apiserver had just closed) is tried again, and an object already there after such a
/// retry was created by the attempt whose answer was lost.
async fn create_once(api: &Api<AccessListConfig>, object: &AccessListConfig) -> Result<(), kube::Error> {
    let mut attempt = 1;
    loop {
        match api.create(&PostParams::default(), object).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(response)) if attempt > 1 && response.code == 409 => return Ok(()),
            Err(kube::Error::Service(_) | kube::Error::HyperError(_)) if attempt < CREATE_ATTEMPTS => attempt += 1,
            Err(error) => return Err(error),
        }
    }
}

/// How long deleting a namespace of `objects` objects may take.
fn deletion_time(objects: usize) -> Duration {
    Duration::from_secs(60) + Duration::from_millis(20 * objects as u64)
}

/// A new namespace with the key Secret, and a watch that answers once `objects` of its
/// AccessListConfigs are in sync.
struct Watched {
    namespace: String,
    api: Api<AccessListConfig>,
    waiter: JoinHandle<anyhow::Result<Instant>>,
}

impl Watched {
    async fn new(cluster: &Cluster, purpose: &str, objects: usize) -> anyhow::Result<Self> {
        let (namespace, api) = cluster.namespace::<AccessListConfig>(purpose).await?;
        let secret = KubeSecret {
            metadata: ObjectMeta {
                name: Some(KEY_SECRET.to_string()),
                ..ObjectMeta::default()
            },
            string_data: Some([("accessKey".to_string(), ACCESS_KEY.to_string())].into()),
            ..KubeSecret::default()
        };
        Api::<KubeSecret>::namespaced(cluster.client.clone(), &namespace)
            .create(&PostParams::default(), &secret)
            .await
            .context("creating the key Secret")?;
        let waiter = ready_waiter(api.clone(), objects, is_in_sync);
        Ok(Self { namespace, api, waiter })
    }

    /// Creates the objects at once.
    async fn create(&self, objects: usize) -> anyhow::Result<()> {
        create_all(&self.api, objects).await
    }
}

/// A bare client's run of what any implementation must do, on `objects` objects in a
/// namespace of its own, against an emulator of its own: the floor. Prepared first,
/// timed by [`BareClient::run`].
struct BareClient {
    platform: EdgeClient,
    watched: Watched,
}

impl BareClient {
    async fn prepare(cluster: &Cluster, sim: &RunningSim, purpose: &str, objects: usize) -> anyhow::Result<Self> {
        let mut config = ClientConfig::new(
            sim.base_url(),
            sim.base_url(),
            Credentials::AccessKey(SecretValue::new(ACCESS_KEY)),
        );
        config.retry = RetryPolicy::none();
        let platform = EdgeClient::new(config)?;
        let watched = Watched::new(cluster, &format!("{purpose}-{objects}"), objects).await?;
        Ok(Self { platform, watched })
    }

    /// On the `objects` waiting AccessListConfigs, reads each zone once, then claims
    /// each configuration (creates its AccessListClaim), PATCHes it and writes each
    /// status (the status the operator would write, with a merge patch), as fast as a
    /// bare client can; answers the namespace and the time until a watch saw every
    /// status, as convergence is timed.
    async fn run(self, objects: usize) -> anyhow::Result<(String, Duration)> {
        let Self { platform, watched } = self;
        let started = Instant::now();
        let api = &watched.api;
        let claims = &Api::<AccessListClaim>::all(api.clone().into_client());
        let platform_url = &platform.config().base_url;
        let namespace = &watched.namespace;
        let zones: HashMap<i64, AccessListsResponse> = stream::iter(1..=ZONES)
            .map(|zone| {
                let platform = &platform;
                async move { anyhow::Ok((zone, platform.access_lists(zone).await?)) }
            })
            .buffer_unordered(CLIENT_CONCURRENCY)
            .try_collect()
            .await?;
        let now = rfc3339(chrono::Utc::now());
        stream::iter(0..objects)
            .map(|i| {
                let (platform, zones, now) = (&platform, &zones, &now);
                async move {
                    let spec = spec(i);
                    let lists = zones.get(&spec.shield_zone_id).context("a zone read")?;
                    let (item, managed) = resolve(&spec, lists)?;
                    claims
                        .create(&PostParams::default(), &claim(platform_url, namespace, i, item, now))
                        .await?;
                    let unwritten = AccessListConfigStatus::default();
                    let plan = plan(&spec, &unwritten, Some(1), item, None);
                    let patch = plan.patch.clone().context("a configuration to change")?;
                    platform
                        .update_access_list(spec.shield_zone_id, item.configuration_id, &patch)
                        .await?;
                    let written = AccessListItem {
                        is_enabled: spec.enabled,
                        ..item.clone()
                    };
                    let status = converged_status(&spec, &unwritten, Some(1), &plan, &written, managed, now);
                    api.patch_status(
                        &name(i),
                        &PatchParams::default(),
                        &Patch::Merge(serde_json::json!({ "status": status })),
                    )
                    .await?;
                    anyhow::Ok(())
                }
            })
            .buffer_unordered(CLIENT_CONCURRENCY)
            .try_collect::<()>()
            .await?;
        let ready_at = tokio::time::timeout(Duration::from_secs(60), watched.waiter)
            .await
            .context("the watch did not see every status written within 60 s")???;
        Ok((watched.namespace, ready_at.duration_since(started)))
    }
}

/// The record the operator creates for object `i` and the configuration it resolved.
fn claim(platform: &str, namespace: &str, i: usize, item: &AccessListItem, now: &str) -> AccessListClaim {
    let zone = spec(i).shield_zone_id;
    let mut record = AccessListClaim::new(
        &claim_name(platform, zone, item.configuration_id),
        AccessListClaimSpec {
            platform: platform.to_string(),
            shield_zone_id: zone,
            configuration_id: item.configuration_id,
            owner: ClaimOwner {
                namespace: namespace.to_string(),
                name: name(i),
                uid: String::new(),
            },
            proof: ClaimProof {
                secret: spec(i).access_key_secret_ref.map(|r| r.name),
                read_at: Some(now.to_string()),
            },
            restore_point: None,
        },
    );
    record
        .labels_mut()
        .insert(PLATFORM_LABEL.to_string(), platform_tag(platform));
    record
}

/// The bare client's work on a few objects, once, so that no measurement pays for a
/// cold apiserver; its namespace is deleted.
async fn warm_up(cluster: &Cluster, objects: usize) -> anyhow::Result<()> {
    let objects = WARM_UP_OBJECTS.min(objects);
    let sim = spawn(document(objects)).await?;
    let floor = BareClient::prepare(cluster, &sim, "warm-up", objects).await?;
    floor.watched.create(objects).await?;
    let (namespace, _) = floor.run(objects).await?;
    cluster.delete_namespace(&namespace, deletion_time(objects)).await?;
    cluster.delete_claims(&sim.base_url()).await
}

/// A new namespace for an operator to watch, its objects to be created before the
/// operator starts (or while it runs); timed by [`Convergence::on_waiting_objects`] and
/// [`Convergence::on_objects_as_created`].
struct Convergence {
    watched: Watched,
    resync: String,
}

impl Convergence {
    async fn prepare(
        cluster: &Cluster,
        sim: &RunningSim,
        settings: &Settings,
        purpose: &str,
        objects: usize,
    ) -> anyhow::Result<Self> {
        let watched = Watched::new(cluster, purpose, objects).await?;
        let resync = humantime::format_duration(settings.resync).to_string();
        sim.sim.clear_journal();
        if !settings.convergence_delay.is_zero() {
            sim.sim
                .add_fault(edge_operator::sim::Fault {
                    method: Some("PATCH".into()),
                    path_prefix: "/shield/shield-zone/".into(),
                    status: None,
                    count: u32::try_from(objects)?,
                    retry_after: None,
                    delay_ms: Some(u64::try_from(settings.convergence_delay.as_millis())?),
                    body: None,
                })
                .map_err(|_| anyhow::anyhow!("no room for the convergence delay"))?;
        }
        Ok(Self { watched, resync })
    }

    fn start_operator(&self, cluster: &Cluster, sim: &RunningSim) -> anyhow::Result<OperatorProcess> {
        cluster.start_operator(
            &sim.base_url(),
            &self.watched.namespace,
            &["--platform-rate", "0", "--concurrency", "32", "--resync", &self.resync],
        )
    }

    /// Starts the operator on the waiting objects; answers it, still running, its
    /// namespace and the time from its start until all are in sync.
    async fn on_waiting_objects(
        self,
        cluster: &Cluster,
        sim: &RunningSim,
        objects: usize,
    ) -> anyhow::Result<Converged> {
        let started = Instant::now();
        let operator = self.start_operator(cluster, sim)?;
        self.until_in_sync(operator, sim, objects, started).await
    }

    /// Starts the operator, then creates the objects; answers it, still running, its
    /// namespace and the time from the creates until all are in sync.
    async fn on_objects_as_created(
        self,
        cluster: &Cluster,
        sim: &RunningSim,
        objects: usize,
    ) -> anyhow::Result<Converged> {
        let mut operator = self.start_operator(cluster, sim)?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        operator.ensure_running()?;
        let started = Instant::now();
        self.watched.create(objects).await?;
        self.until_in_sync(operator, sim, objects, started).await
    }

    async fn until_in_sync(
        self,
        mut operator: OperatorProcess,
        sim: &RunningSim,
        objects: usize,
        started: Instant,
    ) -> anyhow::Result<Converged> {
        let deadline = Duration::from_secs(60) + Duration::from_millis(50 * objects as u64);
        let ready_at = tokio::time::timeout(deadline, self.watched.waiter)
            .await
            .with_context(|| format!("{objects} objects were not in sync within {deadline:?}"))???;
        let journal_at_ready = sim.sim.journal().len();
        let mean_reconcile = operator
            .mean_reconcile(KIND)
            .await
            .context("the operator's metrics answered no reconcile duration")?;
        operator.ensure_running()?;
        Ok(Converged {
            operator,
            namespace: self.watched.namespace,
            time: ready_at.duration_since(started),
            journal_at_ready,
            mean_reconcile,
        })
    }
}

/// A convergence measured, its operator still running.
struct Converged {
    operator: OperatorProcess,
    namespace: String,
    time: Duration,
    /// The emulator's journal entries when every object was in sync (it is cleared
    /// before the operator starts).
    journal_at_ready: usize,
    /// The operator's mean reconcile duration when every object was in sync.
    mean_reconcile: Duration,
}

/// Floors and convergences at one size, measured in pairs.
struct Rounds {
    objects: usize,
    floors: Vec<Duration>,
    convergences: Vec<Duration>,
    mean_reconciles: Vec<Duration>,
    /// The operator's peak RSS (MB) once all were in sync.
    memory: Vec<f64>,
}

impl Rounds {
    fn mean(times: &[Duration]) -> Duration {
        times.iter().sum::<Duration>() / times.len().max(1) as u32
    }

    fn convergence(&self) -> Duration {
        Self::mean(&self.convergences)
    }

    /// Each round's convergence over the floor measured beside it.
    fn ratios(&self) -> Vec<f64> {
        self.convergences
            .iter()
            .zip(&self.floors)
            .map(|(convergence, floor)| convergence.as_secs_f64() / floor.as_secs_f64())
            .collect()
    }

    /// The median of the rounds' ratios, with every measurement.
    fn report(&self, report: &mut Report) {
        let objects = self.objects;
        // The mean of `times` and each of them, in `unit`s of `1 / per_second` s.
        let figures = |times: &[Duration], per_second: f64, unit: &str| {
            let each: Vec<String> = times
                .iter()
                .map(|t| format!("{:.2}", t.as_secs_f64() * per_second))
                .collect();
            let mean = Self::mean(times).as_secs_f64() * per_second;
            format!("{mean:.2} {unit} ({})", each.join(" / "))
        };
        let ratios = self.ratios();
        let ratio = crate::median(&ratios);
        let target = if objects < SMALL_BELOW {
            SMALL_RATIO_TARGET
        } else {
            RATIO_TARGET
        };
        report.info(
            SUITE,
            &format!(
                "{objects} objects: floor: zone reads + PATCHes + status writes on waiting objects, bare client (each)"
            ),
            figures(&self.floors, 1.0, "s"),
        );
        report.info(
            SUITE,
            &format!("{objects} objects: convergence: operator start -> all Ready (each)"),
            figures(&self.convergences, 1.0, "s"),
        );
        report.info(
            SUITE,
            &format!("{objects} objects: convergence: mean reconcile duration, 32 in flight (each)"),
            figures(&self.mean_reconciles, 1000.0, "ms"),
        );
        let memory: Vec<String> = self.memory.iter().map(|mb| format!("{mb:.1}")).collect();
        report.info(
            SUITE,
            &format!("{objects} objects: convergence: operator peak RSS, started on them all waiting (each)"),
            format!("{} MB", memory.join(" / ")),
        );
        check_memory(
            report,
            &format!("operator peak RSS, started on {objects} waiting objects (highest round)"),
            objects,
            self.memory.iter().copied().fold(0.0, f64::max),
        );
        let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        report.check_at_scale(
            SUITE,
            &format!("{objects} objects: convergence / floor beside it, median of {ROUNDS} rounds"),
            format!("{ratio:.2} ({})", each.join(" / ")),
            &format!("<= {target}"),
            ratio <= target,
        );
    }
}

/// One round: two namespaces of `objects` objects each created at once, then a floor on
/// one and a convergence on the other (a new operator started on its waiting objects)
/// timed from the same instant against the same apiserver. With every object waiting,
/// each side's pace is that of its own work; whatever slows the machine slows both.
/// Answers the convergence and the floor; the floor's namespace is deleted.
async fn side_by_side(
    cluster: &Cluster,
    sim: &RunningSim,
    settings: &Settings,
    round: usize,
    objects: usize,
) -> anyhow::Result<(Converged, Duration)> {
    let floor_sim = spawn(document(objects)).await?;
    let floor = BareClient::prepare(cluster, &floor_sim, &format!("floor-{round}"), objects).await?;
    sim.sim.replace(document(objects));
    let convergence =
        Convergence::prepare(cluster, sim, settings, &format!("converge-{round}-{objects}"), objects).await?;
    tokio::try_join!(floor.watched.create(objects), convergence.watched.create(objects))?;
    cluster.settle_etcd().await?;
    let ((floor_namespace, floor), converged) = tokio::try_join!(
        floor.run(objects),
        convergence.on_waiting_objects(cluster, sim, objects)
    )?;
    cluster
        .delete_namespace(&floor_namespace, deletion_time(objects))
        .await?;
    cluster.delete_claims(&floor_sim.base_url()).await?;
    Ok((converged, floor))
}

/// Convergence of `objects` against the floor at that size, over [`ROUNDS`] rounds
/// after a warm-up, each round a floor and a convergence side by side (a new operator,
/// new namespaces), its namespaces deleted before the next, so that every round starts
/// with the same objects in the apiserver (it slows as it fills). The median of the
/// rounds' ratios sets aside a round the apiserver's noise spoiled.
async fn against_floor(
    cluster: &Cluster,
    sim: &RunningSim,
    settings: &Settings,
    objects: usize,
) -> anyhow::Result<Rounds> {
    warm_up(cluster, objects).await?;
    let mut rounds = Rounds {
        objects,
        floors: Vec::new(),
        convergences: Vec::new(),
        mean_reconciles: Vec::new(),
        memory: Vec::new(),
    };
    for round in 1..=ROUNDS {
        let (converged, floor) = side_by_side(cluster, sim, settings, round, objects).await?;
        rounds.floors.push(floor);
        rounds.convergences.push(converged.time);
        rounds.mean_reconciles.push(converged.mean_reconcile);
        rounds.memory.push(converged.operator.peak_rss_mb()?);
        drop(converged.operator);
        cluster
            .delete_namespace(&converged.namespace, deletion_time(objects))
            .await?;
        cluster.delete_claims(&sim.base_url()).await?;
    }
    Ok(rounds)
}

/// A new operator converging `objects` created while it runs: the platform calls,
/// status writes and memory of the objects users apply.
async fn converge_as_created(
    cluster: &Cluster,
    sim: &RunningSim,
    settings: &Settings,
    objects: usize,
) -> anyhow::Result<Converged> {
    sim.sim.replace(document(objects));
    let convergence = Convergence::prepare(cluster, sim, settings, &format!("as-created-{objects}"), objects).await?;
    cluster.settle_etcd().await?;
    convergence.on_objects_as_created(cluster, sim, objects).await
}

pub(crate) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    let objects = settings.objects;
    let sim = spawn(document(objects)).await?;
    report.info(SUITE, "AccessListConfigs over 20 Shield Zones", objects.to_string());
    let rounds = against_floor(cluster, &sim, settings, objects).await?;
    let Converged {
        mut operator,
        namespace,
        time: as_created,
        journal_at_ready,
        ..
    } = converge_as_created(cluster, &sim, settings, objects).await?;
    let convergence = rounds.convergence();
    // Let reconciles that are still writing finish before counting.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let journal = sim.sim.journal();
    let patches = journal.iter().filter(|e| e.method == "PATCH").count();
    let reads = journal
        .iter()
        .take(journal_at_ready)
        .filter(|e| e.method == "GET")
        .count();
    let status_writes = cluster.status_writes(&namespace)?;

    let convergence_figure = format!("{:.2} s", convergence.as_secs_f64());
    if objects < SMALL_BELOW {
        report.check_at_scale(
            SUITE,
            "convergence: operator start on waiting objects -> all Ready",
            convergence_figure,
            &format!("<= {} s", CONVERGENCE_TARGET.as_secs()),
            convergence <= CONVERGENCE_TARGET,
        );
    } else {
        report.info(
            SUITE,
            "convergence: operator start on waiting objects -> all Ready (gated against its floor)",
            convergence_figure,
        );
    }
    report.info(
        SUITE,
        "convergence: create -> all Ready, the operator running",
        format!("{:.2} s", as_created.as_secs_f64()),
    );
    check_convergence_reads(report, reads, as_created, settings.resync);
    report.check(
        SUITE,
        "platform PATCHes per object",
        format!("{:.3}", patches as f64 / objects as f64),
        "1",
        patches == objects,
    );
    let refused = cluster.refused_status_writes(&namespace)?;
    let writes = status_writes.saturating_sub(refused) as f64 / objects as f64;
    report.check(
        SUITE,
        "status writes per object (audit log, accepted)",
        format!("{writes:.3}"),
        &format!("<= {STATUS_WRITES_PER_OBJECT_TARGET}"),
        writes <= STATUS_WRITES_PER_OBJECT_TARGET,
    );
    report.info(
        SUITE,
        "status writes refused as stale (fenced: the object had changed since it was read)",
        refused.to_string(),
    );

    let memory = at_rest(
        cluster,
        &sim,
        settings,
        (&namespace, &mut operator, objects),
        status_writes,
        report,
    )
    .await?;
    check_memory(
        report,
        &format!("operator peak RSS, {objects} objects"),
        objects,
        memory,
    );
    drop(operator);
    start_up(cluster, &sim, &namespace, objects, report).await?;
    cluster.delete_namespace(&namespace, deletion_time(objects)).await?;
    cluster.delete_claims(&sim.base_url()).await?;
    rounds.report(report);

    if let Some(large) = settings.large_objects {
        let rounds = against_floor(cluster, &sim, settings, large).await?;
        let Converged {
            mut operator,
            namespace,
            ..
        } = converge_as_created(cluster, &sim, settings, large).await?;
        let status_writes = cluster.status_writes(&namespace)?;
        let memory = at_rest(
            cluster,
            &sim,
            settings,
            (&namespace, &mut operator, large),
            status_writes,
            report,
        )
        .await?;
        check_memory(report, &format!("operator peak RSS, {large} objects"), large, memory);
        drop(operator);
        start_up(cluster, &sim, &namespace, large, report).await?;
        cluster.delete_namespace(&namespace, deletion_time(large)).await?;
        cluster.delete_claims(&sim.base_url()).await?;
        rounds.report(report);
    }
    check_initial_lists(cluster, report)
}

/// The operators met their AccessListConfigs a bounded part at a time: a watch that
/// streams the initial objects one event each (`sendInitialEvents`), or lists of pages
/// of at most [`LIST_PAGE_SIZE`] objects of the most recent version. A list from any
/// version (`resourceVersion=0`) comes whole from the apiserver's cache.
fn check_initial_lists(cluster: &Cluster, report: &mut Report) -> anyhow::Result<()> {
    let query = |uri: &String| -> HashMap<String, String> {
        url::Url::parse(&format!("https://apiserver{uri}"))
            .map(|url| url.query_pairs().into_owned().collect())
            .unwrap_or_default()
    };
    let lists = cluster.operator_request_uris("list", "accesslistconfigs")?;
    let paged = |uri: &String| {
        let query = query(uri);
        let limit = query.get("limit").and_then(|limit| limit.parse::<u32>().ok());
        limit.is_some_and(|limit| limit <= LIST_PAGE_SIZE) && query.get("resourceVersion").is_none_or(|v| v != "0")
    };
    let whole = lists.iter().filter(|uri| !paged(uri)).count();
    let streamed = cluster
        .operator_request_uris("watch", "accesslistconfigs")?
        .iter()
        .filter(|uri| {
            let query = query(uri);
            query.get("sendInitialEvents").is_some_and(|v| v == "true")
                && query.get("labelSelector").is_none_or(|s| s != NO_OBJECT)
        })
        .count();
    report.check(
        SUITE,
        &format!(
            "operators' initial lists of AccessListConfigs: streamed, or in pages of at most {LIST_PAGE_SIZE} (audit log)"
        ),
        format!("{streamed} streamed, {} paged lists, {whole} whole", lists.len() - whole),
        "none whole",
        streamed + lists.len() > 0 && whole == 0,
    );
    Ok(())
}

/// The platform reads of a convergence that took `time`: each zone is read once for
/// all of its objects, again when that read is [`ZONE_LISTS_TTL`] old, and for
/// its converged objects once per resync; none per object.
fn check_convergence_reads(report: &mut Report, reads: usize, time: Duration, resync: Duration) {
    let per_zone = reads as f64 / ZONES as f64;
    let bound = 1.0 + time.as_secs_f64() / ZONE_LISTS_TTL.as_secs_f64() + time.as_secs_f64() / resync.as_secs_f64();
    report.check(
        SUITE,
        &format!(
            "platform reads per zone, last convergence ({:.1} s, resync {})",
            time.as_secs_f64(),
            humantime::format_duration(resync)
        ),
        format!("{per_zone:.1} ({reads} reads)"),
        &format!("<= {bound:.1}"),
        per_zone <= bound,
    );
}

/// The operator's peak RSS with `objects` converged objects, however it met them (created
/// while it ran, or waiting when it started): against a fixed budget below
/// [`SMALL_BELOW`] objects, per object from there on.
fn check_memory(report: &mut Report, figure: &str, objects: usize, memory: f64) {
    if objects < SMALL_BELOW {
        report.check_at_scale(
            SUITE,
            figure,
            format!("{memory:.1} MB"),
            &format!("<= {MEMORY_TARGET_MB} MB"),
            memory <= MEMORY_TARGET_MB,
        );
    } else {
        let per_object = memory * 1024.0 * 1024.0 / objects as f64;
        report.check_at_scale(
            SUITE,
            figure,
            format!("{memory:.1} MB ({per_object:.0} B per object)"),
            &format!("<= {LARGE_BYTES_PER_OBJECT_TARGET:.0} B per object"),
            per_object <= LARGE_BYTES_PER_OBJECT_TARGET,
        );
    }
}

/// The series the operator exposes with `objects` converged objects: as many whatever
/// their number, and those a series per object (`--object-metrics`) would add.
async fn metric_series(operator: &OperatorProcess, objects: usize, report: &mut Report) {
    let (series, per_object) = operator.series().await.unwrap_or_default();
    report.check(
        SUITE,
        &format!("metric series, {objects} objects"),
        format!("{series} (with --object-metrics: {})", series + per_object),
        &format!("<= {SERIES_TARGET}"),
        series > 0 && series <= SERIES_TARGET,
    );
}

/// A new operator, with the default resync, on `objects` converged objects (the
/// previous one stopped): the time until each has been reconciled once, platform
/// calls, status writes and memory.
async fn start_up(
    cluster: &Cluster,
    sim: &RunningSim,
    namespace: &str,
    objects: usize,
    report: &mut Report,
) -> anyhow::Result<()> {
    let status_writes_before = cluster.status_writes(namespace)?;
    sim.sim.clear_journal();
    let started = Instant::now();
    let mut operator = cluster.start_operator(
        &sim.base_url(),
        namespace,
        &["--platform-rate", "0", "--concurrency", "32"],
    )?;
    let deadline = started + Duration::from_secs(30) + Duration::from_millis(10 * objects as u64);
    while operator.reconciles(KIND).await.unwrap_or(0.0) < objects as f64 {
        operator.ensure_running()?;
        anyhow::ensure!(
            Instant::now() < deadline,
            "the operator did not reconcile {objects} objects within {:?}",
            deadline - started
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let idle_at = started.elapsed();
    // Writes that a start-up reconcile would make land within a second.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let journal = sim.sim.journal();
    let platform_writes = journal.iter().filter(|e| e.method != "GET").count();
    let reads = journal.len() - platform_writes;
    let status_writes = cluster.status_writes(namespace)?.saturating_sub(status_writes_before);
    let memory = operator.peak_rss_mb()?;
    let label = format!("start-up on {objects} converged objects");
    report.info(
        SUITE,
        &format!("{label}: until each is reconciled once"),
        format!("{:.1} s", idle_at.as_secs_f64()),
    );
    report.check(
        SUITE,
        &format!("{label}: platform reads per zone"),
        format!("{:.2} ({reads} reads)", reads as f64 / ZONES as f64),
        "1",
        reads == ZONES as usize,
    );
    no_writes(report, &label, status_writes, platform_writes);
    report.info(SUITE, &format!("{label}: operator peak RSS"), format!("{memory:.1} MB"));
    Ok(())
}

/// Converged objects at rest: the metric series, then the idle period; answers the
/// operator's peak RSS (MB), once it is known to have lasted.
async fn at_rest(
    cluster: &Cluster,
    sim: &RunningSim,
    settings: &Settings,
    (namespace, operator, objects): (&str, &mut OperatorProcess, usize),
    status_writes_before: usize,
    report: &mut Report,
) -> anyhow::Result<f64> {
    metric_series(operator, objects, report).await;
    idle(
        cluster,
        sim,
        settings,
        (namespace, operator, objects),
        status_writes_before,
        report,
    )
    .await?;
    operator.ensure_running()?;
    operator.peak_rss_mb()
}

/// `objects` converged objects left alone for `settings.idle`: nothing may be written, the
/// platform is read only on the resync schedule, and the apiserver is not asked again
/// for what the watches already said (the Secret above all).
async fn idle(
    cluster: &Cluster,
    sim: &RunningSim,
    settings: &Settings,
    (namespace, operator, objects): (&str, &OperatorProcess, usize),
    status_writes_before: usize,
    report: &mut Report,
) -> anyhow::Result<()> {
    sim.sim.clear_journal();
    let (from, reconciles_before) = (chrono::Utc::now(), operator.reconciles(KIND).await);
    tokio::time::sleep(settings.idle).await;
    let (to, reconciles_after) = (chrono::Utc::now(), operator.reconciles(KIND).await);
    let journal = sim.sim.journal();
    let status_writes = cluster.status_writes(namespace)?.saturating_sub(status_writes_before);
    let platform_writes = journal.iter().filter(|e| e.method != "GET").count();
    let reads = journal.len() - platform_writes;
    // A window of n resync periods holds n + 1 resyncs of a zone when it opens just
    // before one.
    let resyncs = (settings.idle.as_secs_f64() / settings.resync.as_secs_f64()).floor() + 1.0;
    let reads_per_zone = reads as f64 / (ZONES as f64 * resyncs);
    let label = format!(
        "{objects} objects, idle {} (resync {})",
        humantime::format_duration(settings.idle),
        humantime::format_duration(settings.resync)
    );
    no_writes(report, &label, status_writes, platform_writes);
    report.check(
        SUITE,
        &format!("{label}: platform reads per zone and resync"),
        format!("{reads_per_zone:.2} ({reads} reads)"),
        &format!("<= {IDLE_READS_PER_ZONE_AND_RESYNC_TARGET}"),
        reads > 0 && reads_per_zone <= IDLE_READS_PER_ZONE_AND_RESYNC_TARGET,
    );
    let reconciles = reconciles_after.zip(reconciles_before).map_or(0.0, |(a, b)| a - b);
    let requests = cluster.operator_requests(from, to)?;
    let per_reconcile = requests.len() as f64 / reconciles.max(1.0);
    let mut kinds: Vec<String> = requests.clone();
    kinds.sort_unstable();
    kinds.dedup();
    report.check(
        SUITE,
        &format!(
            "{label}: apiserver requests per reconcile ({} requests: {}; {reconciles:.0} reconciles)",
            requests.len(),
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(", ")
            }
        ),
        format!("{per_reconcile:.3}"),
        &format!("<= {IDLE_APISERVER_REQUESTS_PER_RECONCILE_TARGET}"),
        reconciles > 0.0 && per_reconcile <= IDLE_APISERVER_REQUESTS_PER_RECONCILE_TARGET,
    );
    Ok(())
}

/// The rows of a period in which nothing may be written.
fn no_writes(report: &mut Report, label: &str, status_writes: usize, platform_writes: usize) {
    for (what, count) in [("status writes", status_writes), ("platform writes", platform_writes)] {
        report.check(SUITE, &format!("{label}: {what}"), count.to_string(), "0", count == 0);
    }
}
