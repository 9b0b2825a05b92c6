//! The owners release 0.2.0 decided, recorded once per platform: at the first start
//! that finds no record of the platform's owners, the first after an upgrade; a
//! ConfigMap of the operator's own says it ran, so no later start takes an owner from
//! a status again.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::super::restore::FINALIZER;
use super::{ClaimRecords, is_code, new_record, proof_of, restore_point_shown};
use crate::controller::framework::prelude::NewCondition;
use crate::controller::kinds::access_list::claim_resource::{
    AccessListClaim, PLATFORM_LABEL, RecordedValues, claim_name, platform_tag,
};
use crate::controller::kinds::access_list::resource::{AccessListConfig, ManagementPolicy};
use crate::controller::kinds::access_list::settings::CarryOverRecord;
use crate::controller::kinds::access_list::vocabulary::AccessListReason;
use crate::resources::is_paused;
use crate::resources::short_digest;
use crate::resources::time::rfc3339;

/// How long the carry-over of 0.2.0's owners may take at start.
const CARRY_OVER_WITHIN: Duration = Duration::from_secs(60);

/// How soon a failed carry-over is tried again.
const CARRY_OVER_RETRY: Duration = Duration::from_secs(2);

impl ClaimRecords {
    /// Once per platform, as `record` keeps count: at a start that finds no record of
    /// `platform` at all, records the owners release 0.2.0 decided among `objects`
    /// (see [`PreviousOwners`]), read as the kind's watch reads them (`initial_list`:
    /// one object at a time where the apiserver streams them, else in pages of the
    /// largest objects that fit); how many. Tried again while the apiserver does not
    /// serve the records yet (a chart upgrade applies their CRD beside the new
    /// operator), for [`CARRY_OVER_WITHIN`] at most; given up at once when the operator
    /// may not read or write them. Without `record`, nothing is carried over.
    pub async fn carry_over(
        client: &kube::Client,
        platform: &str,
        record: Option<&CarryOverRecord>,
        objects: &Api<AccessListConfig>,
        initial_list: &watcher::Config,
    ) -> usize {
        let Some(record) = record else {
            tracing::info!("no --carry-over-record: no owner is taken from a status");
            return 0;
        };
        let deadline = tokio::time::Instant::now() + CARRY_OVER_WITHIN;
        let attempts = retried_until(deadline, "the owners of 0.2.0 are not recorded yet", || {
            try_carry_over(client, platform, record, objects, initial_list)
        });
        match tokio::time::timeout_at(deadline, attempts).await {
            Ok(Ok(count)) => count,
            Ok(Err(error)) => {
                tracing::error!(%error, "the owners of 0.2.0 could not be recorded; claims go to the first claimant");
                0
            }
            Err(_) => {
                tracing::error!(within = ?CARRY_OVER_WITHIN, "recording the owners of 0.2.0 took too long");
                0
            }
        }
    }
}

/// `attempt` until it succeeds, tried again every [`CARRY_OVER_RETRY`] while it fails
/// for a reason waiting may mend (the apiserver not serving a kind yet; not a refusal,
/// 401 or 403) and `deadline` is not reached; its last error otherwise.
async fn retried_until<T, F, Fut>(
    deadline: tokio::time::Instant,
    waiting: &str,
    mut attempt: F,
) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(error)
                if !is_code(&error, 401)
                    && !is_code(&error, 403)
                    && tokio::time::Instant::now() + CARRY_OVER_RETRY < deadline =>
            {
                tracing::warn!(%error, "{waiting}; trying again");
                tokio::time::sleep(CARRY_OVER_RETRY).await;
            }
            Err(error) => return Err(error),
        }
    }
}

/// The owners release 0.2.0 decided, read from their statuses a page of objects at a
/// time: objects that manage and are not paused (nor deleted, unless their restore is
/// pending), whose last reconcile succeeded on the configuration `status.atProvider`
/// names. Of several on one configuration, the oldest. The values to restore are
/// `status.restorePoint`'s when it names that configuration in the spec's zone. Holds
/// one record per configuration, never the objects: what a tenant's objects carry does
/// not stay in memory.
#[derive(Default)]
pub(super) struct PreviousOwners {
    /// By (zone, configuration): the owner's age (creation, uid) and its record.
    pub(super) chosen: HashMap<(i64, i64), (OwnerAge, AccessListClaim)>,
}

type OwnerAge = (Option<Time>, Option<String>);

impl PreviousOwners {
    pub(super) fn consider(&mut self, platform: &str, object: &AccessListConfig) {
        let deleting = object.metadata.deletion_timestamp.is_some();
        let restoring = object.finalizers().iter().any(|f| f == FINALIZER);
        let Some(status) = &object.status else { return };
        let synced =
            NewCondition::<AccessListReason>::synced_in(&status.conditions).is_some_and(|synced| synced.status);
        let decided = object.spec.management_policy == ManagementPolicy::Manage
            && !is_paused(object)
            && (!deleting || restoring)
            && synced;
        let Some(written) = status.at_provider.as_ref().filter(|_| decided) else {
            return;
        };
        let (zone, configuration) = (object.spec.shield_zone_id, written.configuration_id);
        let age = (object.metadata.creation_timestamp.clone(), object.uid());
        if self
            .chosen
            .get(&(zone, configuration))
            .is_some_and(|(oldest, _)| *oldest <= age)
        {
            return;
        }
        let mut record = new_record(platform, object, configuration, "");
        record.spec.proof = proof_of(object, None);
        record.spec.restore_point = restore_point_shown(object, configuration).map(|p| RecordedValues {
            is_enabled: p.is_enabled,
            action: p.action,
        });
        record.spec.restore_point_lost = false;
        self.chosen.insert((zone, configuration), (age, record));
    }

    /// The records, their owners oldest first.
    pub(super) fn records(self) -> Vec<AccessListClaim> {
        let mut chosen: Vec<_> = self.chosen.into_values().collect();
        chosen.sort_by(|(a, _), (b, _)| a.cmp(b));
        chosen.into_iter().map(|(_, record)| record).collect()
    }
}

/// Whether `record` says the carry-over of the platform tagged `tag` ran.
async fn carried_over(marks: &Api<ConfigMap>, record: &CarryOverRecord, tag: &str) -> Result<bool, kube::Error> {
    let found = marks.get_opt(&record.name).await?;
    Ok(found
        .and_then(|map| map.data)
        .is_some_and(|data| data.contains_key(tag)))
}

/// Records in `record` that the carry-over of the platform tagged `tag` ran.
async fn mark_carried_over(
    marks: &Api<ConfigMap>,
    record: &CarryOverRecord,
    tag: &str,
    created: usize,
) -> Result<(), kube::Error> {
    let value = format!("{created} owners recorded at {}", rfc3339(chrono::Utc::now()));
    let mark = json!({ "data": { tag: value } });
    match marks
        .patch(&record.name, &PatchParams::default(), &Patch::Merge(&mark))
        .await
    {
        Err(error) if is_code(&error, 404) => {
            let map = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(record.name.clone()),
                    namespace: Some(record.namespace.clone()),
                    ..ObjectMeta::default()
                },
                data: Some([(tag.to_string(), value)].into()),
                ..ConfigMap::default()
            };
            marks.create(&PostParams::default(), &map).await.map(drop)
        }
        answer => answer.map(drop),
    }
}

async fn try_carry_over(
    client: &kube::Client,
    platform: &str,
    record: &CarryOverRecord,
    objects: &Api<AccessListConfig>,
    initial_list: &watcher::Config,
) -> Result<usize, kube::Error> {
    let tag = platform_tag(platform);
    let marks: Api<ConfigMap> = Api::namespaced(client.clone(), &record.namespace);
    if carried_over(&marks, record, &tag).await? {
        return Ok(0);
    }
    let created = carry_over_unmarked(client, platform, objects, initial_list).await?;
    mark_carried_over(&marks, record, &tag, created).await?;
    Ok(created)
}

async fn carry_over_unmarked(
    client: &kube::Client,
    platform: &str,
    objects: &Api<AccessListConfig>,
    initial_list: &watcher::Config,
) -> Result<usize, kube::Error> {
    let records: Api<AccessListClaim> = Api::all(client.clone());
    let of_platform = ListParams::default()
        .labels(&format!("{PLATFORM_LABEL}={}", platform_tag(platform)))
        .limit(1);
    if !records.list(&of_platform).await?.items.is_empty() {
        return Ok(0);
    }
    let mut owners = PreviousOwners::default();
    let mut listing = watcher(objects.clone(), initial_list.clone()).boxed();
    loop {
        match listing.next().await {
            Some(Ok(watcher::Event::InitApply(object))) => owners.consider(platform, &object),
            Some(Ok(watcher::Event::InitDone)) | None => break,
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(apiserver_error(error)),
        }
    }
    let mut created = 0;
    for record in owners.records() {
        match records.create(&PostParams::default(), &record).await {
            Ok(_) => created += 1,
            Err(error) if is_code(&error, 409) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(created)
}

/// The apiserver's answer behind a failed listing.
fn apiserver_error(error: watcher::Error) -> kube::Error {
    match error {
        watcher::Error::InitialListFailed(error)
        | watcher::Error::WatchStartFailed(error)
        | watcher::Error::WatchFailed(error) => error,
        watcher::Error::WatchError(status) => kube::Error::Api(status),
        other => kube::Error::Service(Box::new(other)),
    }
}

/// Records listed per request while renaming.
const RENAME_PAGE: u32 = 100;

impl ClaimRecords {
    /// [`Self::rename_respelled`], tried again while it fails for a reason waiting may
    /// mend, for [`CARRY_OVER_WITHIN`] at most, before any reconcile claims under the
    /// new names.
    pub async fn rename_all_respelled(client: &kube::Client, platform: &str) {
        let deadline = tokio::time::Instant::now() + CARRY_OVER_WITHIN;
        let waiting = "records named by the platform's URL as spelled are not renamed yet";
        match retried_until(deadline, waiting, || Self::rename_respelled(client, platform)).await {
            Ok(0) => {}
            Ok(renamed) => tracing::info!(renamed, "records named by the platform's URL as spelled renamed"),
            Err(error) => tracing::error!(%error, "records named by the platform's URL as spelled are not renamed"),
        }
    }

    /// Renames the records release 0.3.0 named by the platform's URL as spelled
    /// (trimmed of `/`) to the names of its normalised URL, where the two differ (a host
    /// in capitals, an explicit default port); how many. Each is created under its new
    /// name, then deleted under the old one, a page at a time: a start that stops half
    /// way renames the rest at the next.
    pub async fn rename_respelled(client: &kube::Client, platform: &str) -> Result<usize, kube::Error> {
        let spelled = short_digest(platform.trim_end_matches('/').as_bytes());
        let tag = platform_tag(platform);
        if spelled == tag {
            return Ok(0);
        }
        let records: Api<AccessListClaim> = Api::all(client.clone());
        let mut of_spelling = ListParams::default()
            .labels(&format!("{PLATFORM_LABEL}={spelled}"))
            .limit(RENAME_PAGE);
        let mut renamed = 0;
        loop {
            let page = records.list(&of_spelling).await?;
            for old in page.items {
                if rename(&records, platform, &tag, old).await? {
                    renamed += 1;
                }
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => of_spelling = of_spelling.continue_token(&token),
                _ => return Ok(renamed),
            }
        }
    }
}

/// Creates `old` under its name on `platform` (tagged `tag`), then deletes it under the
/// old one; whether it did. A record already under the new name for another owner
/// (a claimant came first) keeps both, and says so.
async fn rename(
    records: &Api<AccessListClaim>,
    platform: &str,
    tag: &str,
    old: AccessListClaim,
) -> Result<bool, kube::Error> {
    let spec = old.spec.clone();
    let name = claim_name(platform, spec.shield_zone_id, spec.configuration_id);
    let mut record = AccessListClaim::new(&name, spec);
    record.labels_mut().insert(PLATFORM_LABEL.to_string(), tag.to_string());
    match records.create(&PostParams::default(), &record).await {
        Ok(_) => {}
        Err(error) if is_code(&error, 409) => {
            let existing = records.get_opt(&name).await?;
            if existing.is_some_and(|existing| existing.spec.owner.uid != old.spec.owner.uid) {
                tracing::error!(old = %old.name_any(), new = %name, "a record of another owner holds the new name; both are kept");
                return Ok(false);
            }
        }
        Err(error) => return Err(error),
    }
    match records.delete(&old.name_any(), &DeleteParams::default()).await {
        Err(error) if !is_code(&error, 404) => Err(error),
        _ => Ok(true),
    }
}
