//! Which AccessListConfig writes which access-list configuration: one
//! [`AccessListClaim`] per configuration of a platform's Shield Zone, which only the
//! operator writes (so there are never more records than configurations). The first Manage object whose own credentials resolved a configuration
//! creates its record; the apiserver's create-if-absent decides a race, between
//! objects, restarts and shards alike. The record holds the owner (namespace, name,
//! uid), the proof (whose key read the zone, when) and the values read from the
//! platform before the owner's first write, which its deletion restores.
//!
//! The owner keeps the configuration until it is deleted (after its restore), or until
//! a claimant finds its uid gone. Nothing of an object's status is read, except once:
//! at a start that finds no record of its platform (the first after an upgrade),
//! the owners 0.2.0 decided get theirs ([`PreviousOwners`]). Such a record is confirmed by
//! its owner's first read, or released if its owner's key is refused.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::sync::watch;

use super::FINALIZER;
use super::vocabulary::Failure;
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::object::is_paused;
use crate::controller::framework::status::conditions::find;
use crate::controller::framework::status::vocabulary::ConditionType;
use crate::crd::ConditionStatus;
use crate::crd::access_list_claim::{
    AccessListClaim, AccessListClaimSpec, ClaimOwner, ClaimProof, PLATFORM_LABEL, RecordedValues, claim_name,
    platform_tag,
};
use crate::crd::access_list_config::{AccessListConfig, ManagementPolicy};

/// Attempts at settling a record in one reconcile: a create that lost a race, then the
/// release of an owner found gone, then the create again.
const ATTEMPTS: usize = 3;

/// How long the carry-over of 0.2.0's owners may take at start.
const CARRY_OVER_WITHIN: Duration = Duration::from_secs(60);

/// How soon a failed carry-over is tried again.
const CARRY_OVER_RETRY: Duration = Duration::from_secs(2);

/// How long reconciles wait for the first listing of the records.
const READY_WAIT: Duration = Duration::from_secs(30);

/// Objects read per page while carrying over from an apiserver that does not stream
/// them: a page holds what tenants wrote on them (up to the apiserver's 1.5 MiB per
/// object) until its owners are considered.
const PAGE: u32 = 25;

/// The configuration's owner, as a reconcile learns it.
#[derive(Debug, Clone)]
pub(super) enum Claimed {
    /// The object's own.
    Mine(Claim),
    /// Another object's, named as `ConfigurationClaimed` says it.
    Theirs(String),
}

/// What a record says to the object of `uid`.
#[derive(Debug, PartialEq)]
enum Standing<'a> {
    Free,
    Mine,
    Held(&'a ClaimOwner),
}

fn standing<'a>(claim: Option<&'a Claim>, uid: &str) -> Standing<'a> {
    match claim {
        None => Standing::Free,
        Some(claim) if claim.owner.uid == uid => Standing::Mine,
        Some(claim) => Standing::Held(&claim.owner),
    }
}

/// How `ConfigurationClaimed` names `owner` to an object of `namespace`: by name in the
/// same namespace only.
fn describe(owner: &ClaimOwner, namespace: &str) -> String {
    if owner.namespace == namespace {
        format!("AccessListConfig {:?}", owner.name)
    } else {
        "an AccessListConfig of another namespace".to_string()
    }
}

fn owner_of(object: &AccessListConfig) -> ClaimOwner {
    ClaimOwner {
        namespace: object.namespace().unwrap_or_default(),
        name: object.name_any(),
        uid: object.uid().unwrap_or_default(),
    }
}

/// The record `object` creates for `configuration` of its zone on `platform`, its key
/// having read the zone at `now`.
fn new_record(platform: &str, object: &AccessListConfig, configuration: i64, now: &str) -> AccessListClaim {
    let zone = object.spec.shield_zone_id;
    let mut record = AccessListClaim::new(
        &claim_name(platform, zone, configuration),
        AccessListClaimSpec {
            platform: platform.to_string(),
            shield_zone_id: zone,
            configuration_id: configuration,
            owner: owner_of(object),
            proof: proof_of(object, Some(now)),
            restore_point: None,
        },
    );
    record
        .labels_mut()
        .insert(PLATFORM_LABEL.to_string(), platform_tag(platform));
    record
}

fn proof_of(object: &AccessListConfig, read_at: Option<&str>) -> ClaimProof {
    ClaimProof {
        secret: object.spec.access_key_secret_ref.as_ref().map(|r| r.name.clone()),
        read_at: read_at.map(str::to_string),
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
    chosen: HashMap<(i64, i64), (OwnerAge, AccessListClaim)>,
}

type OwnerAge = (Option<Time>, Option<String>);

impl PreviousOwners {
    pub(super) fn consider(&mut self, platform: &str, object: &AccessListConfig) {
        let deleting = object.metadata.deletion_timestamp.is_some();
        let restoring = object.finalizers().iter().any(|f| f == FINALIZER);
        let Some(status) = &object.status else { return };
        let synced = find(&status.conditions, ConditionType::Synced).is_some_and(|c| c.status == ConditionStatus::True);
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
        record.spec.restore_point = status
            .restore_point
            .filter(|p| p.configuration_id == configuration && p.shield_zone_id.is_none_or(|z| z == zone))
            .map(|p| RecordedValues {
                is_enabled: p.is_enabled,
                action: p.action,
            });
        self.chosen.insert((zone, configuration), (age, record));
    }

    /// The records, their owners oldest first.
    pub(super) fn records(self) -> Vec<AccessListClaim> {
        let mut chosen: Vec<_> = self.chosen.into_values().collect();
        chosen.sort_by(|(a, _), (b, _)| a.cmp(b));
        chosen.into_iter().map(|(_, record)| record).collect()
    }
}

async fn try_carry_over(
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
    let mut listing = watcher(objects.clone(), initial_list.clone().page_size(PAGE)).boxed();
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

fn is_code(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(response) if response.code == code)
}

/// A record as reconciles read it: its owner, whether that owner's key confirmed it,
/// the restore point, and the version a write to it is conditional on. The cache holds
/// one per configuration; nothing else of the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Claim {
    name: String,
    resource_version: Option<String>,
    pub(super) shield_zone_id: i64,
    pub(super) configuration_id: i64,
    owner: ClaimOwner,
    confirmed: bool,
    pub(super) restore_point: Option<RecordedValues>,
}

impl From<AccessListClaim> for Claim {
    fn from(record: AccessListClaim) -> Self {
        Self {
            name: record.name_any(),
            resource_version: record.metadata.resource_version,
            shield_zone_id: record.spec.shield_zone_id,
            configuration_id: record.spec.configuration_id,
            owner: record.spec.owner,
            confirmed: record.spec.proof.read_at.is_some(),
            restore_point: record.spec.restore_point,
        }
    }
}

/// The claims of one platform by (zone, configuration), as the watch of their records
/// last listed and followed them.
#[derive(Debug, Default)]
struct Index {
    current: HashMap<(i64, i64), Claim>,
    /// Built while the watch lists anew; replaces `current` when the listing is done.
    relisting: Option<HashMap<(i64, i64), Claim>>,
}

fn insert(claims: &mut HashMap<(i64, i64), Claim>, record: AccessListClaim) {
    let claim = Claim::from(record);
    claims.insert((claim.shield_zone_id, claim.configuration_id), claim);
}

impl Index {
    fn follow(&mut self, event: watcher::Event<AccessListClaim>) {
        match event {
            watcher::Event::Apply(record) => insert(&mut self.current, record),
            watcher::Event::Delete(record) => {
                let key = (record.spec.shield_zone_id, record.spec.configuration_id);
                self.current.remove(&key);
            }
            watcher::Event::Init => self.relisting = Some(HashMap::new()),
            watcher::Event::InitApply(record) => insert(self.relisting.get_or_insert_default(), record),
            watcher::Event::InitDone => self.current = self.relisting.take().unwrap_or_default(),
        }
    }
}

/// The records of configurations and their owners, as the operator's watch of them
/// holds them: as [`Claim`]s.
pub struct ClaimRecords {
    index: Mutex<Index>,
    /// Whether the watch has listed the records once.
    listed: watch::Sender<bool>,
}

impl Default for ClaimRecords {
    fn default() -> Self {
        Self {
            index: Mutex::default(),
            listed: watch::Sender::new(false),
        }
    }
}

impl ClaimRecords {
    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps the cache of `platform`'s records until `stop`. The cache only spares
    /// reads: every decision it suggests is made again by the apiserver (a create, a
    /// conditional delete or patch).
    pub async fn follow(&self, client: kube::Client, platform: &str, stop: impl Future<Output = ()> + Send) {
        let tag = platform_tag(platform);
        let of_platform = watcher::Config::default().labels(&format!("{PLATFORM_LABEL}={tag}"));
        watcher(Api::<AccessListClaim>::all(client), of_platform)
            .default_backoff()
            .take_until(stop)
            .for_each(|event| {
                match event {
                    Ok(event) => {
                        let listed = matches!(event, watcher::Event::InitDone);
                        self.index().follow(event);
                        if listed {
                            self.listed.send_replace(true);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the AccessListClaim watch fails; claims are read from the apiserver");
                    }
                }
                std::future::ready(())
            })
            .await;
    }

    /// Waits until the cache has listed the records once, at most [`READY_WAIT`]: a
    /// start then finds each owner's record without asking the apiserver.
    pub async fn listed(&self) {
        let mut listed = self.listed.subscribe();
        if tokio::time::timeout(READY_WAIT, listed.wait_for(|listed| *listed))
            .await
            .is_err()
        {
            tracing::warn!(within = ?READY_WAIT, "the AccessListClaims are not listed yet; claims are read from the apiserver");
        }
    }

    /// At a start that finds no record of `platform` at all, records the owners release
    /// 0.2.0 decided among `objects` (see [`PreviousOwners`]), read as the kind's watch
    /// reads them (`initial_list`: one object at a time where the apiserver streams
    /// them, else in pages of [`PAGE`]); how many. Tried again
    /// while the apiserver does not serve the records yet (a chart upgrade applies
    /// their CRD beside the new operator), for [`CARRY_OVER_WITHIN`] at most; given up
    /// at once when the operator may not read or write them.
    pub async fn carry_over(
        client: &kube::Client,
        platform: &str,
        objects: &Api<AccessListConfig>,
        initial_list: &watcher::Config,
    ) -> usize {
        let deadline = tokio::time::Instant::now() + CARRY_OVER_WITHIN;
        loop {
            let attempt =
                tokio::time::timeout_at(deadline, try_carry_over(client, platform, objects, initial_list)).await;
            match attempt {
                Ok(Ok(count)) => return count,
                Ok(Err(error))
                    if !is_code(&error, 401)
                        && !is_code(&error, 403)
                        && tokio::time::Instant::now() + CARRY_OVER_RETRY < deadline =>
                {
                    tracing::warn!(%error, "the owners of 0.2.0 are not recorded yet; trying again");
                    tokio::time::sleep(CARRY_OVER_RETRY).await;
                }
                Ok(Err(error)) => {
                    tracing::error!(%error, "the owners of 0.2.0 could not be recorded; claims go to the first claimant");
                    return 0;
                }
                Err(_) => {
                    tracing::error!(within = ?CARRY_OVER_WITHIN, "recording the owners of 0.2.0 took too long");
                    return 0;
                }
            }
        }
    }

    /// The claims `object` owns, as the cache holds them.
    fn owned_by(&self, object: &AccessListConfig) -> Vec<Claim> {
        let uid = object.uid().unwrap_or_default();
        self.index()
            .current
            .values()
            .filter(|claim| claim.owner.uid == uid)
            .cloned()
            .collect()
    }

    /// The claims `object` owns, read from the apiserver: those of the configuration
    /// its spec names, of the one its status last observed (only a pointer: a record
    /// counts only if it names `object` as its owner), and those the cache holds.
    pub(super) async fn records_of(
        &self,
        kube: &kube::Client,
        platform: &str,
        object: &AccessListConfig,
    ) -> Result<Vec<Claim>, Failure> {
        let api: Api<AccessListClaim> = Api::all(kube.clone());
        let zone = object.spec.shield_zone_id;
        let observed = object
            .status
            .as_ref()
            .and_then(|s| s.at_provider.as_ref())
            .map(|p| p.configuration_id);
        let mut names: Vec<String> = [object.spec.configuration_id, observed]
            .into_iter()
            .flatten()
            .map(|configuration| claim_name(platform, zone, configuration))
            .chain(self.owned_by(object).into_iter().map(|claim| claim.name))
            .collect();
        names.sort();
        names.dedup();
        let uid = object.uid().unwrap_or_default();
        let mut owned = Vec::new();
        for name in names {
            if let Some(record) = api.get_opt(&name).await? {
                let claim = Claim::from(record);
                if standing(Some(&claim), &uid) == Standing::Mine {
                    owned.push(claim);
                }
            }
        }
        Ok(owned)
    }

    /// Claims `configuration` of `me`'s zone, which `me`'s own credentials resolved at
    /// `now`: its record (created now if the configuration had none, or if its owner
    /// is gone), or who owns it.
    pub(super) async fn claim(
        &self,
        kube: &kube::Client,
        platform: &str,
        me: &AccessListConfig,
        configuration: i64,
        now: &str,
    ) -> Result<Claimed, Failure> {
        let api: Api<AccessListClaim> = Api::all(kube.clone());
        let name = claim_name(platform, me.spec.shield_zone_id, configuration);
        let uid = me.uid().unwrap_or_default();
        let mut record = self
            .index()
            .current
            .get(&(me.spec.shield_zone_id, configuration))
            .cloned();
        for _ in 0..ATTEMPTS {
            match standing(record.as_ref(), &uid) {
                Standing::Mine => {
                    let Some(mine) = record else { break };
                    return confirm(&api, me, mine, now).await.map(Claimed::Mine);
                }
                Standing::Held(owner) => {
                    if owner_is_alive(kube, owner).await? {
                        return Ok(Claimed::Theirs(describe(owner, &me.namespace().unwrap_or_default())));
                    }
                    if let Some(gone) = &record {
                        tracing::info!(record = %name, owner = ?gone.owner, "released: its owner is gone");
                        release(&api, gone).await?;
                    }
                    record = None;
                }
                Standing::Free => match api
                    .create(&PostParams::default(), &new_record(platform, me, configuration, now))
                    .await
                {
                    Ok(created) => return Ok(Claimed::Mine(created.into())),
                    Err(error) if is_code(&error, 409) => record = api.get_opt(&name).await?.map(Claim::from),
                    Err(error) => return Err(error.into()),
                },
            }
        }
        Err(ReconcileError::Stale)
    }

    /// Keeps in `claim` the values read before its owner's first write.
    pub(super) async fn record_restore_point(
        &self,
        kube: &kube::Client,
        claim: Claim,
        values: RecordedValues,
    ) -> Result<Claim, Failure> {
        patch(&Api::all(kube.clone()), &claim, json!({ "restorePoint": values })).await
    }

    /// Releases `claim`, unless its record changed meanwhile.
    pub(super) async fn release(&self, kube: &kube::Client, claim: &Claim) -> Result<(), Failure> {
        release(&Api::all(kube.clone()), claim).await
    }

    /// Releases the claims of `me` that its key never confirmed (carried over from
    /// 0.2.0), once that key is refused: a status alone never keeps a configuration.
    pub(super) async fn release_unconfirmed(&self, kube: &kube::Client, me: &AccessListConfig) -> Result<(), Failure> {
        for claim in self.owned_by(me) {
            if !claim.confirmed {
                self.release(kube, &claim).await?;
            }
        }
        Ok(())
    }
}

/// A record carried over from 0.2.0 gets the proof of its owner's first read.
async fn confirm(api: &Api<AccessListClaim>, me: &AccessListConfig, claim: Claim, now: &str) -> Result<Claim, Failure> {
    if claim.confirmed {
        return Ok(claim);
    }
    let proof = proof_of(me, Some(now));
    patch(api, &claim, json!({ "proof": proof })).await
}

/// Merges `spec` into the record of `claim` if it is still the version read.
async fn patch(api: &Api<AccessListClaim>, claim: &Claim, spec: serde_json::Value) -> Result<Claim, Failure> {
    let change = json!({
        "metadata": { "resourceVersion": claim.resource_version },
        "spec": spec,
    });
    match api
        .patch(&claim.name, &PatchParams::default(), &Patch::Merge(&change))
        .await
    {
        Ok(written) => Ok(written.into()),
        Err(error) if is_code(&error, 409) => Err(ReconcileError::Stale),
        Err(error) => Err(error.into()),
    }
}

async fn release(api: &Api<AccessListClaim>, claim: &Claim) -> Result<(), Failure> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: None,
            resource_version: claim.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    match api.delete(&claim.name, &params).await {
        Ok(_) => Ok(()),
        Err(error) if is_code(&error, 404) || is_code(&error, 409) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Whether the AccessListConfig `owner` names still exists (the same uid). One the
/// operator may not read counts as alive.
async fn owner_is_alive(kube: &kube::Client, owner: &ClaimOwner) -> Result<bool, Failure> {
    let api: Api<AccessListConfig> = Api::namespaced(kube.clone(), &owner.namespace);
    match api.get_metadata_opt(&owner.name).await {
        Ok(found) => Ok(found.is_some_and(|meta| meta.uid().as_deref() == Some(owner.uid.as_str()))),
        Err(error) if is_code(&error, 403) => Ok(true),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests;
