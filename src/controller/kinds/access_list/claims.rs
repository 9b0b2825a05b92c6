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
//! the owners 0.2.0 decided get theirs ([`carry_over`]). Such a record is confirmed by
//! its owner's first read, or released if its owner's key is refused.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::sync::watch;

use crate::controller::framework::prelude::Failure;
use crate::controller::kinds::access_list::claim_resource::{
    AccessListClaim, AccessListClaimSpec, ClaimOwner, ClaimProof, PLATFORM_LABEL, RecordedValues, claim_name,
    platform_tag,
};
use crate::controller::kinds::access_list::resource::{AccessListConfig, RestorePoint, RolloutStatus};

/// Attempts at settling a record in one reconcile: a create that lost a race, then the
/// release of an owner found gone, then the create again.
const ATTEMPTS: usize = 3;

/// How long reconciles wait for the first listing of the records.
const READY_WAIT: Duration = Duration::from_secs(30);

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

/// The restore point `object`'s status shows for `configuration` of its zone. Never the
/// values a restore writes: only a hint that the object had a record of it.
fn restore_point_shown(object: &AccessListConfig, configuration: i64) -> Option<RestorePoint> {
    let zone = object.spec.shield_zone_id;
    object
        .status
        .as_ref()
        .and_then(|status| status.restore_point)
        .filter(|point| point.configuration_id == configuration && point.shield_zone_id.is_none_or(|z| z == zone))
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
            // A status showing a restore point with no record: the record, and the
            // values it held, are gone. Only ever a loss of the object's own restore.
            restore_point_lost: restore_point_shown(object, configuration).is_some(),
            rollout: None,
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
    pub(super) restore_point_lost: bool,
    /// The owner's rollout as the operator last recorded it.
    pub(super) rollout: Option<Box<RolloutStatus>>,
}

impl Claim {
    /// The name of its AccessListClaim.
    pub(super) fn name(&self) -> &str {
        &self.name
    }
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
            restore_point_lost: record.spec.restore_point_lost,
            rollout: record.spec.rollout.map(Box::new),
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
        let api = Api::<AccessListClaim>::all(client.clone());
        watcher(api.clone(), of_platform)
            .default_backoff()
            .take_until(stop)
            .for_each(|event| async {
                match event {
                    Ok(event) => {
                        let listed = matches!(event, watcher::Event::InitDone);
                        let deleted = match &event {
                            watcher::Event::Delete(record) => Some(record.clone()),
                            _ => None,
                        };
                        self.index().follow(event);
                        if listed {
                            self.listed.send_replace(true);
                        }
                        if let Some(record) = deleted
                            && let Err(error) = recreate_if_kept(&client, &api, record).await
                        {
                            tracing::warn!(%error, "a deleted AccessListClaim is not re-created");
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the AccessListClaim watch fails; claims are read from the apiserver");
                    }
                }
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
    ) -> Result<Vec<Claim>, Failure<AccessListConfig>> {
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
    ) -> Result<Claimed, Failure<AccessListConfig>> {
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
        Err(Failure::<AccessListConfig>::Stale)
    }

    /// Keeps in `claim` the values read before its owner's first write.
    pub(super) async fn record_restore_point(
        &self,
        kube: &kube::Client,
        claim: &Claim,
        values: RecordedValues,
    ) -> Result<Claim, Failure<AccessListConfig>> {
        patch(&Api::all(kube.clone()), claim, json!({ "restorePoint": values })).await
    }

    /// Records in `claim` the rollout its owner's reconcile decided, replacing the one
    /// it held, unless the record changed meanwhile.
    pub(super) async fn record_rollout(
        &self,
        kube: &kube::Client,
        claim: &Claim,
        rollout: &RolloutStatus,
    ) -> Result<Claim, Failure<AccessListConfig>> {
        let replace: json_patch::Patch = serde_json::from_value(json!([
            { "op": "test", "path": "/metadata/resourceVersion", "value": claim.resource_version },
            { "op": "add", "path": "/spec/rollout", "value": rollout },
        ]))
        .map_err(|error| Failure::<AccessListConfig>::Encoding(error.to_string()))?;
        written(
            Api::all(kube.clone())
                .patch(&claim.name, &PatchParams::default(), &Patch::<()>::Json(replace))
                .await,
        )
    }

    /// Releases `claim`, unless its record changed meanwhile.
    pub(super) async fn release(&self, kube: &kube::Client, claim: &Claim) -> Result<(), Failure<AccessListConfig>> {
        release(&Api::all(kube.clone()), claim).await
    }

    /// Releases the claims of `me` that its key never confirmed (carried over from
    /// 0.2.0), once that key is refused: a status alone never keeps a configuration.
    pub(super) async fn release_unconfirmed(
        &self,
        kube: &kube::Client,
        me: &AccessListConfig,
    ) -> Result<(), Failure<AccessListConfig>> {
        for claim in self.owned_by(me) {
            if !claim.confirmed {
                self.release(kube, &claim).await?;
            }
        }
        Ok(())
    }
}

/// A record carried over from 0.2.0 gets the proof of its owner's first read.
async fn confirm(
    api: &Api<AccessListClaim>,
    me: &AccessListConfig,
    claim: Claim,
    now: &str,
) -> Result<Claim, Failure<AccessListConfig>> {
    if claim.confirmed {
        return Ok(claim);
    }
    let proof = proof_of(me, Some(now));
    patch(api, &claim, json!({ "proof": proof })).await
}

/// Merges `spec` into the record of `claim` if it is still the version read.
async fn patch(
    api: &Api<AccessListClaim>,
    claim: &Claim,
    spec: serde_json::Value,
) -> Result<Claim, Failure<AccessListConfig>> {
    let change = json!({
        "metadata": { "resourceVersion": claim.resource_version },
        "spec": spec,
    });
    written(
        api.patch(&claim.name, &PatchParams::default(), &Patch::Merge(&change))
            .await,
    )
}

/// The record as a conditional write left it: stale when it changed meanwhile (a JSON
/// Patch's failed test is 422).
fn written(answer: Result<AccessListClaim, kube::Error>) -> Result<Claim, Failure<AccessListConfig>> {
    match answer {
        Ok(written) => Ok(written.into()),
        Err(error) if is_code(&error, 409) || is_code(&error, 422) => Err(Failure::<AccessListConfig>::Stale),
        Err(error) => Err(error.into()),
    }
}

async fn release(api: &Api<AccessListClaim>, claim: &Claim) -> Result<(), Failure<AccessListConfig>> {
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

/// Re-creates, with what it recorded, a claim deleted by someone else than an operator:
/// one its owner's key confirmed, whose owner exists, is not being deleted and still
/// names that zone and configuration. An operator deletes a claim only once its owner
/// is gone or being deleted, or when the owner's key never confirmed it; a claim the
/// owner no longer names stays deleted, so an administrator can clear it.
async fn recreate_if_kept(
    kube: &kube::Client,
    api: &Api<AccessListClaim>,
    deleted: AccessListClaim,
) -> Result<(), kube::Error> {
    if deleted.spec.proof.read_at.is_none() {
        return Ok(());
    }
    let owner = &deleted.spec.owner;
    let owners: Api<AccessListConfig> = Api::namespaced(kube.clone(), &owner.namespace);
    let kept = owners.get_opt(&owner.name).await?.is_some_and(|object| {
        // An object naming its list by name: the configuration it last resolved.
        let named = object.spec.configuration_id.or_else(|| {
            let observed = object.status.as_ref().and_then(|s| s.at_provider.as_ref());
            observed.map(|provider| provider.configuration_id)
        });
        object.uid().as_deref() == Some(owner.uid.as_str())
            && object.metadata.deletion_timestamp.is_none()
            && object.spec.shield_zone_id == deleted.spec.shield_zone_id
            && named == Some(deleted.spec.configuration_id)
    });
    if !kept {
        return Ok(());
    }
    let mut record = AccessListClaim::new(&deleted.name_any(), deleted.spec);
    record.metadata.labels = deleted.metadata.labels;
    match api.create(&PostParams::default(), &record).await {
        Ok(_) => {
            tracing::warn!(record = %record.name_any(), "an AccessListClaim deleted by someone else is re-created with what it recorded");
            Ok(())
        }
        Err(error) if is_code(&error, 409) => Ok(()),
        Err(error) => Err(error),
    }
}

/// Whether the AccessListConfig `owner` names still exists (the same uid). One the
/// operator may not read counts as alive.
async fn owner_is_alive(kube: &kube::Client, owner: &ClaimOwner) -> Result<bool, Failure<AccessListConfig>> {
    let api: Api<AccessListConfig> = Api::namespaced(kube.clone(), &owner.namespace);
    match api.get_metadata_opt(&owner.name).await {
        Ok(found) => Ok(found.is_some_and(|meta| meta.uid().as_deref() == Some(owner.uid.as_str()))),
        Err(error) if is_code(&error, 403) => Ok(true),
        Err(error) => Err(error.into()),
    }
}

mod carry_over;
#[cfg(test)]
mod tests;
