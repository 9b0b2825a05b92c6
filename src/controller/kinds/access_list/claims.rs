//! What the AccessListConfig watch tells about all objects at once: which object may
//! write which configuration, and which Secrets objects need for a restore. Finding a
//! configuration's owner costs the same with ten objects as with ten thousand.
//!
//! One object writes a configuration. Its owner is, first, the object that has written
//! it (its status says so, or this process let it write): it keeps the configuration
//! until it is deleted. Otherwise the oldest object (`creationTimestamp`, then uid) whose
//! spec names it and whose credentials have not been refused. The decision and the
//! record of the winner happen under one lock, before any write, so objects created
//! together never both write.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::watcher::Event;
use tokio::sync::watch;

use super::{FINALIZER, protected_secret};
use crate::api::models::shield::AccessListItem;
use crate::controller::framework::status::conditions::find;
use crate::controller::framework::status::vocabulary::{ConditionType, Reason, Word};
use crate::crd::ConditionStatus;
use crate::crd::access_list_config::{AccessListConfig, ManagementPolicy};

/// How long a reconcile waits for the first full listing of AccessListConfigs before
/// judging claims (so a newer object cannot win while an older one is not yet known).
const READY_WAIT: Duration = Duration::from_secs(30);

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

/// What one object says about its claims.
#[derive(Debug, Clone, Default)]
struct Entry {
    /// `namespace/name`.
    object: Box<str>,
    age: Age,
    /// The zone and configuration its spec names, when it may write (manages, is not
    /// being deleted, and its credentials were not refused).
    target: Option<(i64, Target)>,
    /// The configurations it has written or may still restore.
    proven: Vec<ListKey>,
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

fn unreachable(object: &AccessListConfig) -> bool {
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
        let manages = object.spec.management_policy == ManagementPolicy::Manage;
        let deleting = object.metadata.deletion_timestamp.is_some();
        let restoring = object.finalizers().iter().any(|f| f == FINALIZER);
        let zone = object.spec.shield_zone_id;
        let target = match (&object.spec.configuration_id, &object.spec.list_name) {
            (Some(id), _) => Some(Target::Configuration(*id)),
            (None, Some(name)) => Some(Target::Name(name.clone())),
            (None, None) => None,
        };
        let proven = match object.status.as_ref() {
            Some(status) if manages && (!deleting || restoring) => {
                let written = status.at_provider.as_ref().map(|p| (zone, p.configuration_id));
                let restored = status
                    .restore_point
                    .map(|p| (p.shield_zone_id.unwrap_or(zone), p.configuration_id));
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
            target: target
                .filter(|_| manages && !deleting && !unreachable(object))
                .map(|target| (zone, target)),
            proven,
            taken: None,
        }
    }

    /// (namespace, name).
    fn names(&self) -> (&str, &str) {
        self.object.split_once('/').unwrap_or(("", &self.object))
    }

    fn secret(&self) -> Option<SecretKey> {
        let secret = self.secret.as_deref()?;
        Some((self.names().0.to_string(), secret.to_string()))
    }

    fn proves(&self, list: ListKey) -> bool {
        self.proven.contains(&list) || self.taken == Some(list)
    }
}

#[derive(Debug, Default)]
struct Index {
    entries: HashMap<Arc<str>, Entry>,
    proven: HashMap<ListKey, Ages>,
    targets: HashMap<(i64, Target), Ages>,
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
        if let Some(previous) = &previous
            && previous.target == entry.target
        {
            entry.taken = previous.taken.filter(|list| !entry.proven.contains(list));
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
        for list in entry.proven.iter().chain(&entry.taken) {
            insert(&mut self.proven, *list, &entry.age);
        }
        if let Some(target) = &entry.target {
            insert(&mut self.targets, target.clone(), &entry.age);
        }
        if let Some(secret) = entry.secret() {
            *self.secret_users.entry(secret).or_default() += 1;
        }
        self.entries.insert(entry.age.1.clone(), entry);
    }

    fn remove(&mut self, uid: &str) -> Option<Entry> {
        let entry = self.entries.remove(uid)?;
        for list in entry.proven.iter().chain(&entry.taken) {
            remove(&mut self.proven, *list, &entry.age);
        }
        if let Some(target) = &entry.target {
            remove(&mut self.targets, target.clone(), &entry.age);
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

    /// The object other than `me` that owns `list`, if any; else records `me` as its
    /// writer.
    fn claim(&mut self, me: &AccessListConfig, list: &AccessListItem) -> Option<String> {
        if me.spec.management_policy != ManagementPolicy::Manage {
            return None;
        }
        let zone = me.spec.shield_zone_id;
        let key = (zone, list.configuration_id);
        let mine = Entry::of(me);
        let uid = mine.age.1.clone();
        let mine = match self.entries.get(&uid) {
            Some(known) => known.clone(),
            None => {
                self.insert(mine.clone());
                mine
            }
        };
        let others = |ages: Option<&Ages>| ages.and_then(|ages| ages.oldest_but(&uid));
        let proven = others(self.proven.get(&key)).map(|age| (false, age));
        let named = [
            Target::Configuration(list.configuration_id),
            Target::Name(list.name.clone()),
        ]
        .into_iter()
        .filter_map(|target| others(self.targets.get(&(zone, target))))
        .min()
        .map(|age| (true, age));
        let rival = proven.or(named);
        let me_rank = (!mine.proves(key), mine.age.clone());
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
                if !mine.proves(key) {
                    self.remove(&uid);
                    self.insert(Entry {
                        taken: Some(key),
                        ..mine
                    });
                }
                None
            }
        }
    }
}

/// Which object writes each configuration, and which Secrets restores need.
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
                // What this process let objects write, until their status says so.
                for (uid, entry) in &state.current.entries {
                    if let (Some(taken), Some(now)) = (entry.taken, listed.entries.get(uid))
                        && now.target == entry.target
                        && !now.proven.contains(&taken)
                    {
                        let now = Entry {
                            taken: Some(taken),
                            ..now.clone()
                        };
                        listed.remove(uid);
                        listed.insert(now);
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

    /// Waits for the first listing, at most [`READY_WAIT`]; whether it is done.
    pub async fn listed(&self) -> bool {
        let mut listed = self.listed.subscribe();
        tokio::time::timeout(READY_WAIT, listed.wait_for(|listed| *listed))
            .await
            .is_ok_and(|done| done.is_ok())
    }

    /// `None` when `me` may write `list` of its zone (then it is recorded as its writer)
    /// or only observes it; else who owns it, named only within `me`'s namespace.
    /// Waits for the first listing, at most [`READY_WAIT`]; past that it judges by what
    /// it knows.
    pub async fn claim(&self, me: &AccessListConfig, list: &AccessListItem) -> Option<String> {
        self.listed().await;
        self.lock().current.claim(me, list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::framework::status::conditions::{Decided, merge};
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
        let decided = [Decided::new(
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
    fn of_objects_created_together_the_oldest_writes_whoever_asks_first() {
        let older = object("older", "2026-11-20T10:00:00Z", Some(9101));
        let same_second = object("same-second", "2026-11-20T10:00:00Z", None);
        let newer = object("newer", "2026-11-20T10:00:01Z", Some(9101));
        let claims = listed(&[&newer, &same_second, &older]);
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
        assert_eq!(owner(&claims, &newer, 9102), None, "another configuration");
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
        let mut theirs = object("theirs", "2026-11-20T10:00:00Z", Some(9101));
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

    #[tokio::test(start_paused = true)]
    async fn claims_are_judged_once_listed_or_after_the_wait() {
        let old = object("old", "2026-11-20T10:00:00Z", Some(9101));
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
