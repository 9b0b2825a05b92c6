//! What the AccessListConfig watch and this process's reads tell about all objects at
//! once: which object may write which configuration, and which Secrets objects need for
//! a restore. Finding a configuration's owner costs the same with ten objects as with
//! ten thousand.
//!
//! Only an object whose own credentials have read its zone in this process and resolved
//! its configuration is a claimant: a paused object, one whose key was refused or one of
//! another account (whose zone answers as missing) blocks no one. Its owner is, first,
//! the claimant that has written it (its status says so, or this process let it write):
//! it keeps the configuration until it is deleted. Otherwise the oldest claimant
//! (`creationTimestamp`, then uid). Status alone proves nothing: a configuration that a
//! status names counts only once the object's own read resolved to it, or, until this
//! process has tried the object's credentials, when its status does not say they were
//! refused. The decision and the record of the winner happen under one lock, before any
//! write, so objects created together never both write.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::watcher::Event;
use tokio::sync::watch;

use super::{FINALIZER, protected_secret};
use crate::api::models::shield::AccessListItem;
use crate::controller::framework::object::is_paused;
use crate::controller::framework::status::conditions::find;
use crate::controller::framework::status::vocabulary::{ConditionType, Reason, StatusName};
use crate::crd::access_list_config::{AccessListConfig, ManagementPolicy};
use crate::crd::{ConditionStatus, SecretKeyRef};

/// How long a reconcile waits for the first full listing of AccessListConfigs before
/// judging claims (so a newer object cannot win while an older one is not yet known).
const READY_WAIT: Duration = Duration::from_secs(30);

/// How long a claimant waits for an older object naming the same configuration to have
/// its credentials tried (so the oldest of objects applied together wins), at most.
const OLDER_CLAIMANT_WAIT: Duration = Duration::from_secs(10);

/// (Shield Zone id, configuration id).
type ListKey = (i64, i64);

/// How a spec names its configuration, in its zone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Target {
    Configuration(i64),
    Name(String),
}

/// (namespace, Secret name).
pub(super) type SecretKey = (String, String);

/// The order that decides ownership: the oldest, then the smallest uid (shared by the
/// object's entry and every set that names it).
type Age = (Option<Time>, Arc<str>);

/// The objects that name one configuration, oldest first. Nearly always one, so a
/// sorted vector: a B-tree would allocate a node of eleven for it.
#[derive(Debug, Default)]
struct Ages(Vec<Age>);

impl Ages {
    fn insert(&mut self, age: &Age) {
        if let Err(at) = self.0.binary_search(age) {
            self.0.insert(at, age.clone());
        }
    }

    fn remove(&mut self, age: &Age) {
        if let Ok(at) = self.0.binary_search(age) {
            self.0.remove(at);
        }
    }

    /// The oldest that is not `uid`.
    fn oldest_but(&self, uid: &str) -> Option<Age> {
        self.0.iter().find(|age| &*age.1 != uid).cloned()
    }
}

/// What this process learnt of an object's credentials on its own configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Proof {
    /// Not tried by this process yet.
    #[default]
    Untried,
    /// Its credentials read its zone, and its spec resolved to this configuration.
    Read(ListKey),
    /// Its credentials were refused, or its zone or list is not theirs to see.
    Refused,
}

/// What one object says about its claims, and what this process proved of it.
#[derive(Debug, Clone, Default)]
struct Entry {
    /// `namespace/name`.
    object: Box<str>,
    age: Age,
    /// It manages, is not being deleted and is not paused: it may write.
    writes: bool,
    /// The configurations its status says it wrote or may still restore (when it
    /// manages, is not paused, and is not deleted unless a restore is pending).
    recorded: Vec<ListKey>,
    /// Its Synced condition says its credentials were refused.
    refused_before: bool,
    /// The zone and configuration its spec names.
    named: Option<(i64, Target)>,
    /// The Secret its credentials come from: a proof holds for these credentials only.
    credentials: Option<SecretKeyRef>,
    proof: Proof,
    /// The configuration this process let it write, until its status says so.
    taken: Option<ListKey>,
    /// The Secret (of its namespace) it needs kept for its restore.
    secret: Option<Box<str>>,
}

/// Reasons of a Synced condition that mean the object's credentials cannot reach its
/// configuration.
const UNREACHABLE: [Reason; 4] = [
    Reason::Unauthorized,
    Reason::Forbidden,
    Reason::NotFound,
    Reason::CredentialsUnavailable,
];

/// Whether `reason` says an object's credentials cannot reach its configuration.
pub(super) fn refuses_credentials(reason: Reason) -> bool {
    UNREACHABLE.contains(&reason)
}

fn refused_before(object: &AccessListConfig) -> bool {
    let conditions = object
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    find(conditions, ConditionType::Synced)
        .is_some_and(|c| c.status == ConditionStatus::False && UNREACHABLE.iter().any(|r| r.as_str() == c.reason))
}

impl Entry {
    fn of(object: &AccessListConfig) -> Self {
        let (namespace, name) = (object.namespace().unwrap_or_default(), object.name_any());
        let uid: Arc<str> = object.uid().unwrap_or_else(|| format!("{namespace}/{name}")).into();
        let manages = object.spec.management_policy == ManagementPolicy::Manage && !is_paused(object);
        let deleting = object.metadata.deletion_timestamp.is_some();
        let restoring = object.finalizers().iter().any(|f| f == FINALIZER);
        let zone = object.spec.shield_zone_id;
        let recorded = match object.status.as_ref() {
            Some(status) if manages && (!deleting || restoring) => {
                let written = status.at_provider.as_ref().map(|p| (zone, p.configuration_id));
                let restored = status
                    .restore_point
                    .filter(|p| p.shield_zone_id.is_none_or(|z| z == zone))
                    .map(|p| (zone, p.configuration_id));
                let mut lists: Vec<ListKey> = written.into_iter().chain(restored).collect();
                lists.dedup();
                lists
            }
            _ => Vec::new(),
        };
        Self {
            secret: protected_secret(object).map(Box::from),
            object: format!("{namespace}/{name}").into(),
            age: (object.metadata.creation_timestamp.clone(), uid),
            writes: manages && !deleting,
            recorded,
            refused_before: refused_before(object),
            named: match (&object.spec.configuration_id, &object.spec.list_name) {
                (Some(id), _) => Some((zone, Target::Configuration(*id))),
                (None, Some(name)) => Some((zone, Target::Name(name.clone()))),
                (None, None) => None,
            },
            credentials: object.spec.access_key_secret_ref.clone(),
            proof: Proof::Untried,
            taken: None,
        }
    }

    /// Carries what this process proved of `previous` over to this newer view of the
    /// same object, while its credentials are the same.
    fn carry(mut self, previous: &Entry) -> Self {
        if previous.credentials == self.credentials {
            self.proof = previous.proof;
            self.taken = previous.taken.filter(|list| !self.recorded.contains(list));
        }
        self
    }

    /// (namespace, name).
    fn names(&self) -> (&str, &str) {
        self.object.split_once('/').unwrap_or(("", &self.object))
    }

    fn secret(&self) -> Option<SecretKey> {
        let secret = self.secret.as_deref()?;
        Some((self.names().0.to_string(), secret.to_string()))
    }

    /// The configuration it asks to write, once its credentials resolved it.
    fn target(&self) -> Option<ListKey> {
        match self.proof {
            Proof::Read(list) if self.writes => Some(list),
            _ => None,
        }
    }

    /// The configuration it owns by having written it, as this process knows: its
    /// status says so and its read resolved to it, or this process let it write.
    fn proven(&self) -> Option<ListKey> {
        match self.proof {
            Proof::Read(list) if self.recorded.contains(&list) => Some(list),
            _ => self.taken,
        }
    }

    /// What its spec names while it may write and its credentials are untried.
    fn untried(&self) -> Option<&(i64, Target)> {
        self.named
            .as_ref()
            .filter(|_| self.writes && self.proof == Proof::Untried && !self.refused_before)
    }

    /// The configurations its status says it owns, until this process tries its
    /// credentials (after a restart), unless its status says they were refused.
    fn vouched(&self) -> &[ListKey] {
        match self.proof {
            Proof::Untried if !self.refused_before => &self.recorded,
            _ => &[],
        }
    }

    /// How strong its claim on `list` is: 0 proven, 1 vouched by its status, 2 named
    /// by its spec and read, 3 none.
    fn standing(&self, list: ListKey) -> u8 {
        if self.proven() == Some(list) {
            0
        } else if self.vouched().contains(&list) {
            1
        } else if self.target() == Some(list) {
            2
        } else {
            3
        }
    }
}

#[derive(Debug, Default)]
struct Index {
    entries: HashMap<Arc<str>, Entry>,
    proven: HashMap<ListKey, Ages>,
    vouched: HashMap<ListKey, Ages>,
    targets: HashMap<ListKey, Ages>,
    untried: HashMap<(i64, Target), Ages>,
    secret_users: HashMap<SecretKey, usize>,
}

fn insert<K: Eq + std::hash::Hash>(map: &mut HashMap<K, Ages>, key: K, age: &Age) {
    map.entry(key).or_default().insert(age);
}

fn remove<K: Eq + std::hash::Hash>(map: &mut HashMap<K, Ages>, key: K, age: &Age) {
    if let std::collections::hash_map::Entry::Occupied(mut set) = map.entry(key) {
        set.get_mut().remove(age);
        if set.get().0.is_empty() {
            set.remove();
        }
    }
}

impl Index {
    /// Records `object`; returns the Secrets whose need may have changed.
    fn apply(&mut self, object: &AccessListConfig) -> Vec<SecretKey> {
        let mut entry = Entry::of(object);
        let previous = self.remove(&entry.age.1);
        if let Some(previous) = &previous {
            entry = entry.carry(previous);
        }
        let touched = previous
            .and_then(|p| p.secret())
            .into_iter()
            .chain(entry.secret())
            .collect();
        self.insert(entry);
        touched
    }

    fn insert(&mut self, entry: Entry) {
        if let Some(list) = entry.proven() {
            insert(&mut self.proven, list, &entry.age);
        }
        for list in entry.vouched() {
            insert(&mut self.vouched, *list, &entry.age);
        }
        if let Some(target) = entry.target() {
            insert(&mut self.targets, target, &entry.age);
        }
        if let Some(named) = entry.untried() {
            insert(&mut self.untried, named.clone(), &entry.age);
        }
        if let Some(secret) = entry.secret() {
            *self.secret_users.entry(secret).or_default() += 1;
        }
        self.entries.insert(entry.age.1.clone(), entry);
    }

    fn remove(&mut self, uid: &str) -> Option<Entry> {
        let entry = self.entries.remove(uid)?;
        if let Some(list) = entry.proven() {
            remove(&mut self.proven, list, &entry.age);
        }
        for list in entry.vouched() {
            remove(&mut self.vouched, *list, &entry.age);
        }
        if let Some(target) = entry.target() {
            remove(&mut self.targets, target, &entry.age);
        }
        if let Some(named) = entry.untried() {
            remove(&mut self.untried, named.clone(), &entry.age);
        }
        if let Some(secret) = entry.secret()
            && let std::collections::hash_map::Entry::Occupied(mut users) = self.secret_users.entry(secret)
        {
            *users.get_mut() -= 1;
            if *users.get() == 0 {
                users.remove();
            }
        }
        Some(entry)
    }

    /// `me`'s entry with `change` applied, recorded only when the watch knows `me`: an
    /// object it saw go stays gone, and needs no Secret, whatever a late pass says.
    fn update(&mut self, me: &AccessListConfig, change: impl FnOnce(&mut Entry)) -> Entry {
        let uid = Entry::of(me).age.1;
        match self.remove(&uid) {
            Some(mut entry) => {
                change(&mut entry);
                self.insert(entry.clone());
                entry
            }
            None => {
                let mut entry = Entry::of(me);
                change(&mut entry);
                entry
            }
        }
    }

    /// Records that `me`'s credentials were refused: it claims nothing.
    fn refuse(&mut self, me: &AccessListConfig) {
        self.update(me, |entry| {
            entry.proof = Proof::Refused;
            entry.taken = None;
        });
    }

    /// Whether an object older than `me` names `list` and has not had its credentials
    /// tried yet, while `me` manages and does not hold `list`.
    fn older_untried(&self, me: &AccessListConfig, list: &AccessListItem) -> bool {
        if me.spec.management_policy != ManagementPolicy::Manage {
            return false;
        }
        let mine = Entry::of(me);
        let zone = me.spec.shield_zone_id;
        let key = (zone, list.configuration_id);
        if self
            .entries
            .get(&mine.age.1)
            .is_some_and(|known| known.standing(key) <= 1)
        {
            return false;
        }
        [
            Target::Configuration(list.configuration_id),
            Target::Name(list.name.clone()),
        ]
        .into_iter()
        .filter_map(|target| self.untried.get(&(zone, target))?.oldest_but(&mine.age.1))
        .any(|age| age < mine.age)
    }

    /// Records that `me`'s credentials resolved `list`; then the object other than `me`
    /// that owns it, if any, else records `me` as its writer.
    fn claim(&mut self, me: &AccessListConfig, list: &AccessListItem) -> Option<String> {
        if me.spec.management_policy != ManagementPolicy::Manage {
            return None;
        }
        let key = (me.spec.shield_zone_id, list.configuration_id);
        let mine = self.update(me, |entry| entry.proof = Proof::Read(key));
        let uid = mine.age.1.clone();
        let others = |ages: Option<&Ages>| ages.and_then(|ages| ages.oldest_but(&uid));
        let rival = [&self.proven, &self.vouched, &self.targets]
            .into_iter()
            .zip(0..)
            .find_map(|(claimants, standing)| others(claimants.get(&key)).map(|age| (standing, age)));
        let me_rank = (mine.standing(key), mine.age.clone());
        match rival.filter(|rival| *rival < me_rank) {
            Some((_, age)) => {
                let owner = &self.entries[&age.1];
                let (owner_namespace, owner_name) = owner.names();
                Some(if owner_namespace == mine.names().0 {
                    format!("AccessListConfig {owner_name:?}")
                } else {
                    "an AccessListConfig of another namespace".to_string()
                })
            }
            None => {
                if mine.proven() != Some(key) {
                    self.update(me, |entry| entry.taken = Some(key));
                }
                None
            }
        }
    }
}

/// Which object writes each configuration, and which Secrets restores need.
pub struct Claims {
    state: Mutex<State>,
    /// Bumped whenever an object's credentials are tried.
    tried: watch::Sender<u64>,
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
            tried: watch::Sender::new(0),
            listed: watch::Sender::new(false),
        }
    }
}

impl Claims {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Follows the AccessListConfig watch; returns the Secrets whose need may have
    /// changed.
    pub fn follow(&self, event: &Event<AccessListConfig>) -> Vec<SecretKey> {
        let mut state = self.lock();
        match event {
            Event::Apply(object) => state.current.apply(object),
            Event::Delete(object) => {
                let uid = Entry::of(object).age.1;
                state
                    .current
                    .remove(&uid)
                    .and_then(|entry| entry.secret())
                    .into_iter()
                    .collect()
            }
            Event::Init => {
                state.relisting = Some(Index::default());
                Vec::new()
            }
            Event::InitApply(object) => {
                state.relisting.get_or_insert_default().apply(object);
                Vec::new()
            }
            Event::InitDone => {
                let mut listed = state.relisting.take().unwrap_or_default();
                // What this process proved of objects, and let them write.
                for (uid, entry) in &state.current.entries {
                    if entry.proof != Proof::Untried
                        && let Some(now) = listed.remove(uid)
                    {
                        listed.insert(now.carry(entry));
                    }
                }
                let previous = std::mem::replace(&mut state.current, listed);
                self.listed.send_replace(true);
                let touched: BTreeSet<SecretKey> = previous
                    .secret_users
                    .into_keys()
                    .chain(state.current.secret_users.keys().cloned())
                    .collect();
                touched.into_iter().collect()
            }
        }
    }

    /// Whether some object needs `secret` kept for its restore.
    pub fn needs_secret(&self, secret: &SecretKey) -> bool {
        self.lock().current.secret_users.contains_key(secret)
    }

    /// Records that `me`'s credentials were refused, or cannot see its zone or list:
    /// it blocks no one.
    pub fn refuse(&self, me: &AccessListConfig) {
        self.lock().current.refuse(me);
        self.tried.send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Waits for the first listing, at most [`READY_WAIT`]; whether it is done.
    pub async fn listed(&self) -> bool {
        let mut listed = self.listed.subscribe();
        tokio::time::timeout(READY_WAIT, listed.wait_for(|listed| *listed))
            .await
            .is_ok_and(|done| done.is_ok())
    }

    /// Records that `me`'s credentials resolved `list` of its zone. `None` when `me` may
    /// write it (then it is recorded as its writer) or only observes it; else who owns
    /// it, named only within `me`'s namespace.
    /// Waits for the first listing, at most [`READY_WAIT`]; past that it judges by what
    /// it knows.
    ///
    /// While an older object that names the same configuration has not had its
    /// credentials tried, waits for that, at most [`OLDER_CLAIMANT_WAIT`]: of objects
    /// applied together the oldest wins, and an object that is never tried delays a
    /// claimant once, by that long.
    pub async fn claim(&self, me: &AccessListConfig, list: &AccessListItem) -> Option<String> {
        self.listed().await;
        let mut tried = self.tried.subscribe();
        let waited = tokio::time::timeout(OLDER_CLAIMANT_WAIT, async {
            while self.lock().current.older_untried(me, list) {
                if tried.changed().await.is_err() {
                    break;
                }
            }
        });
        let _ = waited.await;
        let owner = self.lock().current.claim(me, list);
        self.tried.send_modify(|count| *count = count.wrapping_add(1));
        owner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::framework::status::conditions::{NewCondition, merge};
    use crate::crd::access_list_config::{
        AccessListConfigSpec, AccessListConfigStatus, AccessListObservation, DeletionPolicy,
    };

    const LIST_NAME: &str = "Known bad actors";

    fn time(raw: &str) -> Time {
        Time(raw.parse().expect("time"))
    }

    fn list(configuration_id: i64) -> AccessListItem {
        AccessListItem {
            configuration_id,
            name: if configuration_id == 9101 {
                LIST_NAME.into()
            } else {
                format!("list {configuration_id}")
            },
            ..AccessListItem::default()
        }
    }

    /// An object whose spec names `configuration` (by name when `None`), never reconciled.
    fn object(name: &str, created: &str, configuration: Option<i64>) -> AccessListConfig {
        let spec = AccessListConfigSpec {
            shield_zone_id: 1,
            configuration_id: configuration,
            list_name: configuration.is_none().then(|| LIST_NAME.to_string()),
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

    /// The object once its status says it wrote `configuration_id`.
    fn written(mut object: AccessListConfig, configuration_id: i64) -> AccessListConfig {
        object.status = Some(AccessListConfigStatus {
            at_provider: Some(AccessListObservation {
                configuration_id,
                ..AccessListObservation::default()
            }),
            ..AccessListConfigStatus::default()
        });
        object
    }

    fn refused(mut object: AccessListConfig) -> AccessListConfig {
        let decided = [NewCondition::new(
            ConditionType::Synced,
            false,
            Reason::Unauthorized,
            "refused",
        )];
        object.status = Some(AccessListConfigStatus {
            conditions: merge(&[], &decided, Some(1), "t"),
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
        claims.lock().current.claim(me, &list(configuration_id))
    }

    #[test]
    fn only_objects_whose_own_credentials_read_the_configuration_claim_it() {
        let older = object("older", "2026-11-20T10:00:00Z", Some(9101));
        let newer = object("newer", "2026-11-20T10:00:01Z", None);
        let claims = listed(&[&newer, &older]);
        assert_eq!(
            owner(&claims, &newer, 9101),
            None,
            "older never read it: newer may write"
        );
        for _ in 0..2 {
            assert_eq!(
                owner(&claims, &older, 9101).as_deref(),
                Some("AccessListConfig \"newer\"")
            );
        }
        assert_eq!(owner(&claims, &newer, 9102), None, "another configuration");
    }

    #[test]
    fn once_the_owner_is_gone_the_oldest_claimant_that_read_it_writes() {
        let owner_object = written(object("owner", "2026-11-20T09:00:00Z", Some(9101)), 9101);
        let older = object("older", "2026-11-20T10:00:00Z", Some(9101));
        let same_second = object("same-second", "2026-11-20T10:00:00Z", None);
        let newer = object("newer", "2026-11-20T10:00:01Z", Some(9101));
        let claims = listed(&[&owner_object, &newer, &same_second, &older]);
        for claimant in [&newer, &same_second, &older] {
            assert_eq!(
                owner(&claims, claimant, 9101).as_deref(),
                Some("AccessListConfig \"owner\"")
            );
        }
        claims.follow(&Event::Delete(owner_object));
        for _ in 0..2 {
            assert_eq!(
                owner(&claims, &newer, 9101).as_deref(),
                Some("AccessListConfig \"older\"")
            );
            assert_eq!(
                owner(&claims, &same_second, 9101).as_deref(),
                Some("AccessListConfig \"older\""),
                "same second: the smaller uid"
            );
        }
        assert_eq!(owner(&claims, &older, 9101), None);
    }

    #[test]
    fn the_first_writer_keeps_the_configuration_until_it_is_deleted() {
        let older = object("older", "2026-11-20T10:00:00Z", Some(9101));
        let newer = object("newer", "2026-11-20T10:00:00Z", Some(9101));
        let claims = listed(&[&newer]);
        assert_eq!(owner(&claims, &newer, 9101), None, "alone when it asks: it may write");
        claims.follow(&Event::Apply(older.clone()));
        assert_eq!(
            owner(&claims, &older, 9101).as_deref(),
            Some("AccessListConfig \"newer\"")
        );
        claims.follow(&Event::Apply(written(newer.clone(), 9101)));
        assert_eq!(
            owner(&claims, &older, 9101).as_deref(),
            Some("AccessListConfig \"newer\""),
            "its status now says so"
        );
        claims.follow(&Event::Delete(newer));
        assert_eq!(owner(&claims, &older, 9101), None);
    }

    #[test]
    fn paused_refused_and_misdirected_squatters_block_no_one() {
        let mut paused = written(object("paused", "2026-11-20T09:00:00Z", Some(9101)), 9101);
        paused
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(crate::crd::ANNOTATION_PAUSED.into(), "true".into());
        let refused_here = written(object("refused-here", "2026-11-20T09:00:00Z", Some(9101)), 9101);
        let elsewhere = written(object("elsewhere", "2026-11-20T09:00:00Z", Some(9102)), 9101);
        let victim = object("victim", "2026-11-20T12:00:00Z", Some(9101));
        let claims = listed(&[&paused, &refused_here, &elsewhere, &victim]);
        assert!(
            owner(&claims, &victim, 9101).is_some(),
            "forged statuses count until their credentials are tried"
        );
        claims.refuse(&refused_here);
        assert_eq!(
            owner(&claims, &elsewhere, 9102),
            None,
            "its read resolved 9102, not 9101"
        );
        assert_eq!(
            owner(&claims, &victim, 9101),
            None,
            "paused, refused, or resolved elsewhere"
        );
        claims.follow(&Event::Apply(refused_here.clone()));
        assert_eq!(owner(&claims, &victim, 9101), None, "a refusal outlives watch events");
        let mut new_key = refused_here;
        new_key.spec.access_key_secret_ref = Some(crate::crd::SecretKeyRef {
            name: "other".into(),
            key: "accessKey".into(),
        });
        claims.follow(&Event::Apply(new_key));
        assert_eq!(
            owner(&claims, &victim, 9101),
            None,
            "the victim holds it now; another key proves nothing until it reads"
        );
    }

    #[test]
    fn a_restoring_object_keeps_its_claim_and_an_observer_or_refused_key_claims_nothing() {
        let old = written(object("old", "2026-11-20T10:00:00Z", Some(9101)), 9101);
        let new = object("new", "2026-11-20T12:00:00Z", Some(9101));
        let claims = listed(&[&old, &new]);
        let mut restoring = old.clone();
        restoring.metadata.deletion_timestamp = Some(time("2026-11-20T13:00:00Z"));
        restoring.metadata.finalizers = Some(vec![FINALIZER.into()]);
        claims.follow(&Event::Apply(restoring.clone()));
        assert!(
            owner(&claims, &new, 9101).is_some(),
            "held while its restore may still write"
        );
        let mut leaving = restoring;
        leaving.metadata.finalizers = None;
        claims.follow(&Event::Apply(leaving));
        assert_eq!(owner(&claims, &new, 9101), None);

        let squatter = refused(object("squatter", "2026-11-20T09:00:00Z", Some(9102)));
        let mut observer = object("observer", "2026-11-20T09:00:00Z", Some(9102));
        observer.spec.management_policy = ManagementPolicy::Observe;
        claims.follow(&Event::Apply(squatter));
        claims.follow(&Event::Apply(observer.clone()));
        let late = object("late", "2026-11-20T14:00:00Z", Some(9102));
        claims.follow(&Event::Apply(late.clone()));
        assert_eq!(owner(&claims, &late, 9102), None, "older, but refused or observing");
        assert_eq!(owner(&claims, &observer, 9102), None, "an observer is never refused");
    }

    #[test]
    fn an_owner_in_another_namespace_is_not_named() {
        let mut theirs = written(object("theirs", "2026-11-20T10:00:00Z", Some(9101)), 9101);
        theirs.metadata.namespace = Some("other-team".into());
        let mine = object("mine", "2026-11-20T12:00:00Z", Some(9101));
        let claims = listed(&[&theirs, &mine]);
        let said = owner(&claims, &mine, 9101).expect("claimed");
        assert!(!said.contains("theirs") && !said.contains("other-team"), "{said}");
    }

    #[test]
    fn a_new_listing_forgets_objects_deleted_meanwhile_and_keeps_who_may_write() {
        let old = object("old", "2026-11-20T10:00:00Z", Some(9101));
        let new = object("new", "2026-11-20T12:00:00Z", Some(9102));
        let claims = listed(&[&old, &new]);
        assert_eq!(owner(&claims, &new, 9102), None);
        claims.follow(&Event::Init);
        let older = object("older", "2026-11-20T09:00:00Z", Some(9102));
        for object in [&new, &older] {
            claims.follow(&Event::InitApply(object.clone()));
        }
        let late = object("late", "2026-11-20T13:00:00Z", Some(9101));
        claims.follow(&Event::InitApply(late.clone()));
        claims.follow(&Event::InitDone);
        assert_eq!(owner(&claims, &late, 9101), None, "old is gone");
        assert_eq!(
            owner(&claims, &older, 9102).as_deref(),
            Some("AccessListConfig \"new\""),
            "new was let write before the re-list"
        );
    }

    fn restoring_with(name: &str, secret: &str) -> AccessListConfig {
        let mut object = object(name, "2026-11-20T10:00:00Z", Some(9101));
        object.spec.deletion_policy = DeletionPolicy::Restore;
        object.spec.access_key_secret_ref = Some(crate::crd::SecretKeyRef {
            name: secret.into(),
            key: "accessKey".into(),
        });
        object
    }

    #[test]
    fn a_secret_is_needed_while_any_object_may_restore_with_it() {
        let key = |name: &str| ("team".to_string(), name.to_string());
        let (a, b) = (restoring_with("a", "shared"), restoring_with("b", "shared"));
        let claims = listed(&[&a, &b]);
        assert!(claims.needs_secret(&key("shared")));
        let mut moved = a.clone();
        moved.spec.access_key_secret_ref = Some(crate::crd::SecretKeyRef {
            name: "own".into(),
            key: "accessKey".into(),
        });
        assert_eq!(claims.follow(&Event::Apply(moved)), vec![key("shared"), key("own")]);
        assert!(claims.needs_secret(&key("shared")) && claims.needs_secret(&key("own")));
        let mut released = b.clone();
        released.metadata.deletion_timestamp = Some(time("2026-11-20T13:00:00Z"));
        assert_eq!(claims.follow(&Event::Apply(released)), vec![key("shared")]);
        assert!(!claims.needs_secret(&key("shared")), "its restore is over");
        claims.follow(&Event::Init);
        claims.follow(&Event::InitDone);
        assert!(
            !claims.needs_secret(&key("own")),
            "a's deletion was missed, the re-list tells"
        );
    }

    #[tokio::test]
    async fn a_pass_that_outlives_its_object_does_not_bring_its_secret_need_back() {
        let key = ("team".to_string(), "shared".to_string());
        let mut restoring = restoring_with("a", "shared");
        restoring.metadata.deletion_timestamp = Some(time("2026-11-20T13:00:00Z"));
        restoring.finalizers_mut().push(FINALIZER.into());
        let claims = listed(&[&restoring]);
        assert!(claims.needs_secret(&key));
        assert_eq!(claims.follow(&Event::Delete(restoring.clone())), vec![key.clone()]);
        assert_eq!(claims.claim(&restoring, &list(9101)).await, None);
        claims.refuse(&restoring);
        assert!(!claims.needs_secret(&key), "the watch saw it go");
    }

    #[tokio::test(start_paused = true)]
    async fn a_claimant_waits_a_bounded_time_for_older_objects_to_be_tried() {
        let older = object("older", "2026-11-20T10:00:00Z", Some(9101));
        let newer = object("newer", "2026-11-20T12:00:00Z", None);
        let claims = std::sync::Arc::new(listed(&[&older, &newer]));
        let judging = tokio::spawn({
            let (claims, newer) = (claims.clone(), newer.clone());
            async move { claims.claim(&newer, &list(9101)).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!judging.is_finished(), "older is not tried yet");
        assert_eq!(claims.claim(&older, &list(9101)).await, None);
        assert_eq!(
            judging.await.expect("task").as_deref(),
            Some("AccessListConfig \"older\""),
            "of objects applied together, the oldest"
        );

        let squatter = object("squatter", "2026-11-20T09:00:00Z", Some(9102));
        let victim = object("victim", "2026-11-20T12:00:00Z", Some(9102));
        let claims = listed(&[&squatter, &victim]);
        let started = tokio::time::Instant::now();
        assert_eq!(
            claims.claim(&victim, &list(9102)).await,
            None,
            "never tried: waited for once"
        );
        assert_eq!(started.elapsed(), OLDER_CLAIMANT_WAIT);
        let started = tokio::time::Instant::now();
        assert_eq!(claims.claim(&victim, &list(9102)).await, None);
        assert_eq!(started.elapsed(), Duration::ZERO, "the owner does not wait again");
        claims.refuse(&victim);
        let started = tokio::time::Instant::now();
        let _ = claims.claim(&squatter, &list(9102)).await;
        assert_eq!(started.elapsed(), Duration::ZERO, "nobody older");

        let older = object("older", "2026-11-20T09:00:00Z", Some(9201));
        let mut observer = object("observer", "2026-11-20T12:00:00Z", Some(9201));
        observer.spec.management_policy = ManagementPolicy::Observe;
        let claims = listed(&[&older, &observer]);
        let started = tokio::time::Instant::now();
        assert_eq!(claims.claim(&observer, &list(9201)).await, None);
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "an observer claims nothing and waits for no one"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn claims_are_judged_once_listed_or_after_the_wait() {
        let old = written(object("old", "2026-11-20T10:00:00Z", Some(9101)), 9101);
        let new = object("new", "2026-11-20T12:00:00Z", Some(9101));
        let claims = std::sync::Arc::new(Claims::default());
        claims.follow(&Event::Init);
        claims.follow(&Event::InitApply(old.clone()));
        let judging = tokio::spawn({
            let (claims, new) = (claims.clone(), new.clone());
            async move { claims.claim(&new, &list(9101)).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!judging.is_finished(), "the listing is not done");
        claims.follow(&Event::InitDone);
        assert_eq!(
            judging.await.expect("task").as_deref(),
            Some("AccessListConfig \"old\"")
        );

        let unlisted = Claims::default();
        let started = tokio::time::Instant::now();
        assert_eq!(unlisted.claim(&new, &list(9101)).await, None);
        assert_eq!(started.elapsed(), READY_WAIT);
    }
}
