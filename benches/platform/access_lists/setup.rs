//! What every measurement of the suite starts from: the emulator's document, the
//! objects, a watched namespace, the bare client's floor and the warm-up.

use super::*;

pub(super) fn document(objects: usize) -> SimDocument {
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

pub(super) fn spec(index: usize) -> AccessListConfigSpec {
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

pub(super) fn name(index: usize) -> String {
    format!("alc-{index:05}")
}

pub(crate) fn is_in_sync(object: &AccessListConfig) -> bool {
    object
        .status
        .as_ref()
        .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Ready" && c.reason == "InSync"))
}

pub(super) async fn create_all(api: &Api<AccessListConfig>, objects: usize) -> anyhow::Result<()> {
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
pub(super) const CREATE_ATTEMPTS: usize = 3;

/// Creates `object`; a connection closed under the request (a pooled connection the
/// apiserver had just closed) is tried again, and an object already there after such a
/// retry was created by the attempt whose answer was lost.
pub(super) async fn create_once(api: &Api<AccessListConfig>, object: &AccessListConfig) -> Result<(), kube::Error> {
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
pub(crate) fn deletion_time(objects: usize) -> Duration {
    Duration::from_secs(60) + Duration::from_millis(20 * objects as u64)
}

/// A new namespace with the key Secret, and a watch that answers once `objects` of its
/// AccessListConfigs are in sync.
pub(super) struct Watched {
    pub(super) namespace: String,
    pub(super) api: Api<AccessListConfig>,
    pub(super) waiter: JoinHandle<anyhow::Result<Instant>>,
}

impl Watched {
    pub(super) async fn new(cluster: &Cluster, purpose: &str, objects: usize) -> anyhow::Result<Self> {
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
    pub(super) async fn create(&self, objects: usize) -> anyhow::Result<()> {
        create_all(&self.api, objects).await
    }
}

/// A bare client's run of what any implementation must do, on `objects` objects in a
/// namespace of its own, against an emulator of its own: the floor. Prepared first,
/// timed by [`BareClient::run`].
pub(super) struct BareClient {
    pub(super) platform: EdgeClient,
    pub(super) watched: Watched,
}

impl BareClient {
    pub(super) async fn prepare(
        cluster: &Cluster,
        sim: &RunningSim,
        purpose: &str,
        objects: usize,
    ) -> anyhow::Result<Self> {
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
    pub(super) async fn run(self, objects: usize) -> anyhow::Result<(String, Duration)> {
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
        let instant = chrono::Utc::now();
        let now = rfc3339(instant);
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
                    let status = converged_status(&spec, &unwritten, Some(1), (&plan, &written, managed), instant);
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
pub(super) fn claim(platform: &str, namespace: &str, i: usize, item: &AccessListItem, now: &str) -> AccessListClaim {
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
            restore_point_lost: false,
            rollout: None,
        },
    );
    record
        .labels_mut()
        .insert(PLATFORM_LABEL.to_string(), platform_tag(platform));
    record
}

/// The bare client's work on a few objects, once, so that no measurement pays for a
/// cold apiserver; its namespace is deleted.
pub(super) async fn warm_up(cluster: &Cluster, objects: usize) -> anyhow::Result<()> {
    let objects = WARM_UP_OBJECTS.min(objects);
    let sim = spawn(document(objects)).await?;
    let floor = BareClient::prepare(cluster, &sim, "warm-up", objects).await?;
    floor.watched.create(objects).await?;
    let (namespace, _) = floor.run(objects).await?;
    cluster.delete_namespace(&namespace, deletion_time(objects)).await?;
    cluster.delete_claims(&sim.base_url()).await
}
