//! What the AccessListConfig watch tells about all objects at once: which object claims
//! which access list, and which Secrets objects need for a restore. Finding a list's
//! owner costs the same with ten objects as with ten thousand.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::watcher::Event;
use tokio::sync::watch;

use super::{FINALIZER, protected_secret};
use crate::crd::access_list_config::{AccessListConfig, ManagementPolicy};

/// How long a reconcile waits for the first full listing of AccessListConfigs before
/// judging claims (so a newer object cannot win while an older one is not yet known).
const READY_WAIT: Duration = Duration::from_secs(30);

/// (Shield Zone id, configuration id).
type ListKey = (i64, i64);

/// An object that manages a list, in the order that decides ownership: the oldest,
/// then the first by namespace and name (the uid only separates a deleted object
/// from its namesake).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Claimant {
    created: Option<Time>,
    namespace: String,
    name: String,
    uid: String,
}

impl Claimant {
    fn of(object: &AccessListConfig) -> Self {
        let (namespace, name) = (object.namespace().unwrap_or_default(), object.name_any());
        Self {
            created: object.metadata.creation_timestamp.clone(),
            uid: object.uid().unwrap_or_else(|| format!("{namespace}/{name}")),
            namespace,
            name,
        }
    }
}

/// The lists `object` claims: the one its status says it read with its own
/// credentials, and the one its restore point belongs to. A spec alone claims nothing,
/// so an object whose key never worked blocks no one. A deleting object keeps its claim
/// while it holds the restore finalizer; an observing one claims nothing.
fn claimed_lists(object: &AccessListConfig) -> Vec<ListKey> {
    let restoring = object.finalizers().iter().any(|f| f == FINALIZER);
    if object.metadata.deletion_timestamp.is_some() && !restoring
        || object.spec.management_policy != ManagementPolicy::Manage
    {
        return Vec::new();
    }
    let zone = object.spec.shield_zone_id;
    let Some(status) = object.status.as_ref() else {
        return Vec::new();
    };
    let resolved = status.at_provider.as_ref().map(|p| (zone, p.configuration_id));
    let restored = status
        .restore_point
        .map(|p| (p.shield_zone_id.unwrap_or(zone), p.configuration_id));
    let mut lists: Vec<ListKey> = resolved.into_iter().chain(restored).collect();
    lists.dedup();
    lists
}

#[derive(Debug, Default)]
struct Index {
    by_list: HashMap<ListKey, BTreeSet<Claimant>>,
    by_uid: HashMap<String, (Claimant, Vec<ListKey>)>,
    /// (namespace, Secret) each object needs kept for its restore, by uid.
    secrets: HashMap<String, (String, String)>,
}

impl Index {
    fn apply(&mut self, object: &AccessListConfig) {
        let claimant = Claimant::of(object);
        self.remove(&claimant.uid);
        if let Some(secret) = protected_secret(object) {
            let entry = (claimant.namespace.clone(), secret.to_string());
            self.secrets.insert(claimant.uid.clone(), entry);
        }
        let lists = claimed_lists(object);
        if lists.is_empty() {
            return;
        }
        for list in &lists {
            self.by_list.entry(*list).or_default().insert(claimant.clone());
        }
        self.by_uid.insert(claimant.uid.clone(), (claimant, lists));
    }

    fn remove(&mut self, uid: &str) {
        self.secrets.remove(uid);
        let Some((claimant, lists)) = self.by_uid.remove(uid) else {
            return;
        };
        for list in lists {
            if let Entry::Occupied(mut claimants) = self.by_list.entry(list) {
                claimants.get_mut().remove(&claimant);
                if claimants.get().is_empty() {
                    claimants.remove();
                }
            }
        }
    }

    fn owner(&self, me: &AccessListConfig, configuration_id: i64) -> Option<String> {
        if me.spec.management_policy != ManagementPolicy::Manage {
            return None;
        }
        let list = (me.spec.shield_zone_id, configuration_id);
        let me = Claimant::of(me);
        let owner = self.by_list.get(&list)?.iter().find(|c| c.uid != me.uid)?;
        (*owner < me).then(|| format!("{}/{}", owner.namespace, owner.name))
    }
}

/// When several objects manage one configuration, the oldest keeps it: the others are
/// refused instead of fighting over it at every resync.
pub struct Claims {
    state: Mutex<State>,
    /// Whether the watch has listed every object once.
    listed: watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct State {
    current: Index,
    /// Built while the watch lists anew; replaces `current` when the listing is done,
    /// which drops objects deleted while the watch was down.
    relisting: Option<Index>,
}

impl Default for Claims {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            listed: watch::Sender::new(false),
        }
    }
}

impl Claims {
    /// Follows the AccessListConfig watch.
    pub fn follow(&self, event: &Event<AccessListConfig>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Apply(object) => state.current.apply(object),
            Event::Delete(object) => state.current.remove(&Claimant::of(object).uid),
            Event::Init => state.relisting = Some(Index::default()),
            Event::InitApply(object) => state.relisting.get_or_insert_default().apply(object),
            Event::InitDone => {
                state.current = state.relisting.take().unwrap_or_default();
                self.listed.send_replace(true);
            }
        }
    }

    /// The Secrets of `namespace` that objects other than `uid` need for a restore.
    pub fn secrets_needed(&self, namespace: &str, uid: &str) -> BTreeSet<String> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .current
            .secrets
            .iter()
            .filter(|(other, (ns, _))| *other != uid && ns == namespace)
            .map(|(_, (_, secret))| secret.clone())
            .collect()
    }

    /// `None` when `me` owns `configuration_id` of its zone (or only observes it); else
    /// the owner as `namespace/name`. Waits for the first listing, at most
    /// [`READY_WAIT`]; past that it judges by what it knows.
    pub async fn owner(&self, me: &AccessListConfig, configuration_id: i64) -> Option<String> {
        let mut listed = self.listed.subscribe();
        let _ = tokio::time::timeout(READY_WAIT, listed.wait_for(|listed| *listed)).await;
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.current.owner(me, configuration_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::access_list_config::{
        AccessListConfigSpec, AccessListConfigStatus, AccessListObservation, DeletionPolicy,
    };

    fn time(raw: &str) -> Time {
        Time(raw.parse().expect("time"))
    }

    /// An object that has read `configuration` with its credentials.
    fn object(name: &str, created: &str, configuration: Option<i64>) -> AccessListConfig {
        let object = unconfirmed(name, created, configuration);
        match configuration {
            Some(id) => resolved(object, id),
            None => object,
        }
    }

    /// An object whose spec names `configuration` but that never read it.
    fn unconfirmed(name: &str, created: &str, configuration: Option<i64>) -> AccessListConfig {
        let spec = AccessListConfigSpec {
            shield_zone_id: 1,
            configuration_id: configuration,
            list_name: configuration.is_none().then(|| "Known bad actors".to_string()),
            enabled: true,
            action: None,
            management_policy: ManagementPolicy::Manage,
            deletion_policy: DeletionPolicy::Orphan,
            access_key_secret_ref: None,
        };
        let mut object = AccessListConfig::new(name, spec);
        object.metadata.namespace = Some("team".into());
        object.metadata.uid = Some(format!("uid-{name}"));
        object.metadata.creation_timestamp = Some(time(created));
        object
    }

    fn resolved(mut object: AccessListConfig, configuration_id: i64) -> AccessListConfig {
        object.status = Some(AccessListConfigStatus {
            at_provider: Some(AccessListObservation {
                configuration_id,
                ..AccessListObservation::default()
            }),
            ..AccessListConfigStatus::default()
        });
        object
    }

    fn listed(objects: &[&AccessListConfig]) -> Claims {
        let claims = Claims::default();
        claims.follow(&Event::Init);
        for object in objects {
            claims.follow(&Event::InitApply((*object).clone()));
        }
        claims.follow(&Event::InitDone);
        claims
    }

    fn owner(claims: &Claims, me: &AccessListConfig, configuration_id: i64) -> Option<String> {
        let state = claims.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.current.owner(me, configuration_id)
    }

    #[test]
    fn the_oldest_claim_on_a_configuration_wins_and_the_others_name_it() {
        let old = object("old", "2026-11-20T10:00:00Z", Some(9101));
        let by_name = resolved(object("by-name", "2026-11-20T11:00:00Z", None), 9101);
        let new = object("new", "2026-11-20T12:00:00Z", Some(9101));
        let claims = listed(&[&new, &old, &by_name]);
        assert_eq!(owner(&claims, &old, 9101), None);
        assert_eq!(owner(&claims, &new, 9101).as_deref(), Some("team/old"));
        assert_eq!(owner(&claims, &by_name, 9101).as_deref(), Some("team/old"));
        assert_eq!(owner(&claims, &new, 9102), None, "another configuration");
        let mut other_zone = new.clone();
        other_zone.spec.shield_zone_id = 2;
        assert_eq!(owner(&claims, &other_zone, 9101), None, "another zone");
        let mut observer = new.clone();
        observer.spec.management_policy = ManagementPolicy::Observe;
        assert_eq!(owner(&claims, &observer, 9101), None, "observing claims nothing");

        let mut restoring = old.clone();
        restoring.metadata.deletion_timestamp = Some(time("2026-11-20T13:00:00Z"));
        restoring.metadata.finalizers = Some(vec![FINALIZER.into()]);
        claims.follow(&Event::Apply(restoring.clone()));
        assert_eq!(
            owner(&claims, &new, 9101).as_deref(),
            Some("team/old"),
            "held while its restore may still write"
        );
        let mut leaving = restoring;
        leaving.metadata.finalizers = None;
        claims.follow(&Event::Apply(leaving));
        assert_eq!(owner(&claims, &new, 9101).as_deref(), Some("team/by-name"));
        claims.follow(&Event::Delete(by_name.clone()));
        assert_eq!(owner(&claims, &new, 9101), None, "the only claim left");
    }

    #[test]
    fn a_changed_object_claims_only_what_it_names_now() {
        let old = object("old", "2026-11-20T10:00:00Z", Some(9101));
        let new = object("new", "2026-11-20T12:00:00Z", Some(9101));
        let claims = listed(&[&old, &new]);
        let moved = resolved(old.clone(), 9102);
        claims.follow(&Event::Apply(moved.clone()));
        assert_eq!(owner(&claims, &new, 9101), None);
        assert_eq!(owner(&claims, &new, 9102).as_deref(), Some("team/old"));
        let mut observing = moved;
        observing.spec.management_policy = ManagementPolicy::Observe;
        claims.follow(&Event::Apply(observing));
        let late = object("late", "2026-11-20T13:00:00Z", Some(9102));
        assert_eq!(owner(&claims, &late, 9102), None, "an observer claims nothing");
    }

    #[test]
    fn a_new_listing_forgets_objects_deleted_while_the_watch_was_down() {
        let old = object("old", "2026-11-20T10:00:00Z", Some(9101));
        let new = object("new", "2026-11-20T12:00:00Z", Some(9101));
        let claims = listed(&[&old, &new]);
        claims.follow(&Event::Init);
        assert_eq!(
            owner(&claims, &new, 9101).as_deref(),
            Some("team/old"),
            "the previous listing holds until the new one is done"
        );
        claims.follow(&Event::InitApply(new.clone()));
        claims.follow(&Event::InitDone);
        assert_eq!(owner(&claims, &new, 9101), None);
    }

    #[test]
    fn a_spec_alone_claims_nothing() {
        let squatter = unconfirmed("squatter", "2026-11-20T09:00:00Z", Some(9101));
        let owner_now = object("legit", "2026-11-20T12:00:00Z", Some(9101));
        let claims = listed(&[&squatter, &owner_now]);
        assert_eq!(
            owner(&claims, &owner_now, 9101),
            None,
            "an older object that never read the list"
        );
    }

    #[test]
    fn namesakes_are_told_apart_by_uid() {
        let first = object("same", "2026-11-20T10:00:00Z", Some(9101));
        let mut second = first.clone();
        second.metadata.uid = Some("uid-second".into());
        let claims = listed(&[&first, &second]);
        let owners = [owner(&claims, &first, 9101), owner(&claims, &second, 9101)];
        assert_eq!(owners.iter().filter(|o| o.is_none()).count(), 1, "{owners:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn claims_are_judged_once_listed_or_after_the_wait() {
        let old = object("old", "2026-11-20T10:00:00Z", Some(9101));
        let new = object("new", "2026-11-20T12:00:00Z", Some(9101));
        let claims = std::sync::Arc::new(Claims::default());
        claims.follow(&Event::Init);
        claims.follow(&Event::InitApply(old.clone()));
        let judging = tokio::spawn({
            let (claims, new) = (claims.clone(), new.clone());
            async move { claims.owner(&new, 9101).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!judging.is_finished(), "the listing is not done");
        claims.follow(&Event::InitDone);
        assert_eq!(judging.await.expect("task").as_deref(), Some("team/old"));

        let unlisted = Claims::default();
        let started = tokio::time::Instant::now();
        assert_eq!(unlisted.owner(&new, 9101).await, None);
        assert_eq!(started.elapsed(), READY_WAIT);
    }
}
