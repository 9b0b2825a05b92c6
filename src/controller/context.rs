//! What every reconciler shares: Kubernetes and platform clients, credentials, the
//! per-zone access-list cache, Events and metrics.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::ReconcileError;
use super::metrics::Metrics;
use super::shared_reads::SharedReads;
use crate::api::models::shield::AccessListsResponse;
use crate::api::{ApiError, Credentials, EdgeClient, Secret};
use crate::crd::container_app_watch::CdnSummary;
use crate::crd::{ANNOTATION_PAUSED, ANNOTATION_POLL_INTERVAL, SecretKeyRef};

/// How long one read of a zone's access lists serves the reconciles of that zone (a
/// burst of creates shares it; resyncs of a zone happen at one instant anyway).
const ZONE_LISTS_TTL: Duration = Duration::from_secs(5);
/// How long one CDN summary serves the watches of the same Pull Zone and window: less
/// than the shortest poll interval (10 s), so each poll sees fresh logs.
const CDN_SUMMARY_TTL: Duration = Duration::from_secs(5);

/// Field manager and Event reporter name.
pub const MANAGER: &str = "edge-operator";

pub struct Context {
    pub kube: kube::Client,
    /// Client with the operator's own credentials (or none, when no default key is set).
    pub platform: EdgeClient,
    pub has_default_key: bool,
    /// Default re-read period (`--resync`).
    pub resync: Duration,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    zone_lists: SharedReads<ZoneKey, AccessListsResponse>,
    cdn_summaries: SharedReads<CdnKey, CdnSummary>,
    /// Consecutive failures per object, for the error backoff.
    failures: std::sync::Mutex<HashMap<String, u32>>,
    /// Per-object backoff of certificate completion attempts.
    pub certificate_backoff: crate::api::RetryPolicy,
}

/// (credential identity, Shield Zone id).
type ZoneKey = (String, i64);
/// (credential identity, Pull Zone id, window).
type CdnKey = (String, i64, String);

impl Context {
    pub fn new(
        kube: kube::Client,
        platform: EdgeClient,
        has_default_key: bool,
        resync: Duration,
        metrics: Arc<Metrics>,
        recorder: Recorder,
    ) -> Self {
        Self {
            kube,
            platform,
            has_default_key,
            resync,
            metrics,
            recorder,
            zone_lists: SharedReads::new(ZONE_LISTS_TTL),
            cdn_summaries: SharedReads::new(CDN_SUMMARY_TTL),
            failures: std::sync::Mutex::default(),
            certificate_backoff: crate::api::RetryPolicy {
                max_retries: u32::MAX,
                initial_backoff: Duration::from_secs(30),
                max_backoff: Duration::from_secs(3600),
            },
        }
    }

    /// The delay before retrying an object after its `n`-th consecutive failure:
    /// exponential from 5 s (transient errors) or 30 s (others), capped at 5 min.
    pub fn failure_backoff(&self, key: String, error: &ReconcileError) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let count = failures.entry(key).or_default();
        *count = count.saturating_add(1);
        let policy = crate::api::RetryPolicy {
            max_retries: u32::MAX,
            initial_backoff: Duration::from_secs(if error.is_transient() { 5 } else { 30 }),
            max_backoff: Duration::from_secs(300),
        };
        policy.backoff(*count - 1)
    }

    /// Runs one reconcile of `object`, recording its duration and outcome.
    pub async fn track<K: Resource<DynamicType = ()> + ResourceExt>(
        &self,
        object: &K,
        work: impl std::future::Future<Output = Result<kube::runtime::controller::Action, ReconcileError>>,
    ) -> Result<kube::runtime::controller::Action, ReconcileError> {
        let started = std::time::Instant::now();
        let result = work.await;
        if result.is_ok() {
            self.succeeded(&object_key(object));
        }
        let kind: &'static str = match K::kind(&()).as_ref() {
            "AccessListConfig" => "AccessListConfig",
            "PullZoneCertificate" => "PullZoneCertificate",
            "ContainerAppWatch" => "ContainerAppWatch",
            _ => "Other",
        };
        self.metrics.reconciled(
            kind,
            started.elapsed(),
            result.as_ref().err().map(ReconcileError::reason),
        );
        result
    }

    /// Forgets an object's failures after a successful reconcile.
    pub fn succeeded(&self, key: &str) {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }

    /// The platform client for an object: its Secret's key, or the operator's own.
    pub async fn client_for(
        &self,
        namespace: &str,
        secret: Option<&SecretKeyRef>,
    ) -> Result<EdgeClient, ReconcileError> {
        let Some(reference) = secret else {
            return if self.has_default_key {
                Ok(self.platform.clone())
            } else {
                Err(ReconcileError::NoCredentials)
            };
        };
        let problem = |problem: String| ReconcileError::Credentials {
            namespace: namespace.to_string(),
            name: reference.name.clone(),
            problem,
        };
        let secrets: Api<KubeSecret> = Api::namespaced(self.kube.clone(), namespace);
        let secret = secrets
            .get_opt(&reference.name)
            .await?
            .ok_or_else(|| problem("not found".into()))?;
        let value = secret
            .data
            .as_ref()
            .and_then(|data| data.get(&reference.key))
            .ok_or_else(|| problem(format!("has no key {:?}", reference.key)))?;
        let key =
            String::from_utf8(value.0.clone()).map_err(|_| problem(format!("key {:?} is not UTF-8", reference.key)))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(problem(format!("key {:?} is empty", reference.key)));
        }
        Ok(self.platform.with_credentials(Credentials::AccessKey(Secret::new(key))))
    }

    /// The zone's access lists, read at most once per [`ZONE_LISTS_TTL`] per credential:
    /// concurrent reconciles of one zone share a single read.
    pub async fn zone_access_lists(
        &self,
        client: &EdgeClient,
        zone: i64,
    ) -> Result<AccessListsResponse, ReconcileError> {
        let lists = self
            .zone_lists
            .get_or_read((credential_id(client), zone), || client.access_lists(zone))
            .await?;
        Ok(lists)
    }

    /// Records a write in the cached zone lists, so later reconciles see it.
    pub async fn note_access_list_write(
        &self,
        client: &EdgeClient,
        zone: i64,
        configuration_id: i64,
        enabled: bool,
        action: i32,
    ) {
        let key = (credential_id(client), zone);
        self.zone_lists
            .update(&key, |lists| {
                let items = lists.managed_lists.iter_mut().chain(lists.custom_lists.iter_mut());
                for item in items.filter(|i| i.configuration_id == configuration_id) {
                    item.is_enabled = enabled;
                    item.action = action;
                }
            })
            .await;
    }

    /// The CDN summary of a Pull Zone over `window`, made by `summarise` at most once
    /// per [`CDN_SUMMARY_TTL`] per credential: the watches of one Pull Zone share its
    /// logging quota instead of each paging through the same logs.
    pub async fn cdn_summary<Fut>(
        &self,
        client: &EdgeClient,
        pull_zone_id: i64,
        window: &str,
        summarise: impl FnOnce() -> Fut,
    ) -> Result<CdnSummary, ApiError>
    where
        Fut: Future<Output = Result<CdnSummary, ApiError>>,
    {
        let key = (credential_id(client), pull_zone_id, window.to_string());
        self.cdn_summaries.get_or_read(key, summarise).await
    }

    /// Publishes an Event about `object`; failures are logged, never fatal.
    pub async fn event<K: Resource<DynamicType = ()>>(&self, object: &K, type_: EventType, reason: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.to_string(),
            note: Some(note),
            action: "Reconcile".to_string(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &object.object_ref(&())).await {
            tracing::warn!(%error, reason, "cannot publish Event");
        }
    }
}

/// A stable identity of the client's credentials that does not reveal them.
fn credential_id(client: &EdgeClient) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match &client.config().credentials {
        Credentials::AccessKey(key) | Credentials::Bearer(key) => key.expose().hash(&mut hasher),
    }
    format!("{:016x}", hasher.finish())
}

/// Whether the object carries `edgeplatform.io/paused: "true"`.
pub fn is_paused<K: ResourceExt>(object: &K) -> bool {
    object
        .annotations()
        .get(ANNOTATION_PAUSED)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The object's re-read period: its poll-interval annotation, else `default`.
pub fn poll_interval<K: ResourceExt>(object: &K, default: Duration) -> Duration {
    object
        .annotations()
        .get(ANNOTATION_POLL_INTERVAL)
        .and_then(|v| parse_go_duration(v))
        .filter(|d| !d.is_zero())
        .unwrap_or(default)
}

/// Writes `status` unless it equals `current` (no status noise). Server-side apply
/// with one field manager, so fields the operator stops setting are removed.
pub async fn write_status<K, S>(
    api: &Api<K>,
    object: &K,
    current: Option<&S>,
    status: &S,
) -> Result<bool, ReconcileError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    if current == Some(status) {
        return Ok(false);
    }
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    api.patch_status(
        &object.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    Ok(true)
}

/// RFC 3339 with seconds precision, as conditions and status times carry it.
pub fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// [`rfc3339`] of now.
pub fn now_rfc3339() -> String {
    rfc3339(chrono::Utc::now())
}

/// Parses a Go-style duration of the specs and annotations (`720h`, `90m`, `10s`).
pub fn parse_go_duration(raw: &str) -> Option<Duration> {
    humantime::parse_duration(raw.trim()).ok()
}

/// The key of an object in per-object bookkeeping: `Kind/namespace/name`.
pub fn object_key<K: Resource<DynamicType = ()> + ResourceExt>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}
