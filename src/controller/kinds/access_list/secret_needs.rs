//! Which Secrets restores need, from the AccessListConfig watch: a Secret is needed
//! while some live object may restore with it (see [`protected_secret`]). A re-list
//! replaces what the watch knew, so objects deleted while it was down are forgotten.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::watcher::Event;
use tokio::sync::watch;

use super::protected_secret;
use crate::controller::kinds::access_list::resource::AccessListConfig;

/// How long a caller waits for the first full listing of AccessListConfigs.
const READY_WAIT: Duration = Duration::from_secs(30);

/// (namespace, Secret name).
pub(super) type SecretKey = (String, String);

#[derive(Debug, Default)]
struct Index {
    /// The Secret each object (by uid) needs.
    needs: HashMap<String, SecretKey>,
    /// How many objects need each Secret.
    users: HashMap<SecretKey, usize>,
}

impl Index {
    /// Records `object`; returns the Secrets whose need may have changed.
    fn apply(&mut self, object: &AccessListConfig) -> Vec<SecretKey> {
        let previous = self.remove(&uid_of(object));
        let needed = protected_secret(object).map(|name| (object.namespace().unwrap_or_default(), name.to_string()));
        if let Some(secret) = &needed {
            *self.users.entry(secret.clone()).or_default() += 1;
            self.needs.insert(uid_of(object), secret.clone());
        }
        let touched: BTreeSet<SecretKey> = previous.into_iter().chain(needed).collect();
        touched.into_iter().collect()
    }

    fn remove(&mut self, uid: &str) -> Option<SecretKey> {
        let secret = self.needs.remove(uid)?;
        if let std::collections::hash_map::Entry::Occupied(mut users) = self.users.entry(secret.clone()) {
            *users.get_mut() -= 1;
            if *users.get() == 0 {
                users.remove();
            }
        }
        Some(secret)
    }
}

fn uid_of(object: &AccessListConfig) -> String {
    object
        .uid()
        .unwrap_or_else(|| format!("{}/{}", object.namespace().unwrap_or_default(), object.name_any()))
}

/// Which Secrets live objects need for their restores.
pub struct SecretNeeds {
    state: Mutex<State>,
    /// Whether the watch has listed every object once.
    listed: watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct State {
    current: Index,
    /// Built while the watch lists anew; replaces `current` when the listing is done.
    relisting: Option<Index>,
}

impl Default for SecretNeeds {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            listed: watch::Sender::new(false),
        }
    }
}

impl SecretNeeds {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Follows the AccessListConfig watch; returns the Secrets whose need may have
    /// changed.
    pub fn follow(&self, event: &Event<AccessListConfig>) -> Vec<SecretKey> {
        let mut state = self.lock();
        match event {
            Event::Apply(object) => state.current.apply(object),
            Event::Delete(object) => state.current.remove(&uid_of(object)).into_iter().collect(),
            Event::Init => {
                state.relisting = Some(Index::default());
                Vec::new()
            }
            Event::InitApply(object) => {
                state.relisting.get_or_insert_default().apply(object);
                Vec::new()
            }
            Event::InitDone => {
                let listed = state.relisting.take().unwrap_or_default();
                let previous = std::mem::replace(&mut state.current, listed);
                self.listed.send_replace(true);
                let touched: BTreeSet<SecretKey> = previous
                    .users
                    .into_keys()
                    .chain(state.current.users.keys().cloned())
                    .collect();
                touched.into_iter().collect()
            }
        }
    }

    /// Whether some object needs `secret` kept for its restore.
    pub fn needs_secret(&self, secret: &SecretKey) -> bool {
        self.lock().current.users.contains_key(secret)
    }

    /// Waits for the first listing, at most [`READY_WAIT`]; whether it is done.
    pub async fn listed(&self) -> bool {
        let mut listed = self.listed.subscribe();
        tokio::time::timeout(READY_WAIT, listed.wait_for(|listed| *listed))
            .await
            .is_ok_and(|done| done.is_ok())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::super::FINALIZER;
    use super::super::fixtures::spec;
    use super::*;
    use crate::controller::kinds::access_list::resource::DeletionPolicy;

    fn restoring_with(name: &str, secret: &str) -> AccessListConfig {
        let mut object = AccessListConfig::new(name, spec(true, None));
        object.metadata.namespace = Some("team".into());
        object.metadata.uid = Some(format!("uid-{name}"));
        object.spec.deletion_policy = DeletionPolicy::Restore;
        object.spec.access_key_secret_ref = Some(crate::resources::SecretKeyRef {
            name: secret.into(),
            key: "accessKey".into(),
        });
        object
    }

    fn listed(objects: &[&AccessListConfig]) -> SecretNeeds {
        let needs = SecretNeeds::default();
        needs.follow(&Event::Init);
        for object in objects {
            needs.follow(&Event::InitApply((*object).clone()));
        }
        needs.follow(&Event::InitDone);
        needs
    }

    #[test]
    fn a_secret_is_needed_while_any_object_may_restore_with_it() {
        let key = |name: &str| ("team".to_string(), name.to_string());
        let (a, b) = (restoring_with("a", "shared"), restoring_with("b", "shared"));
        let needs = listed(&[&a, &b]);
        assert!(needs.needs_secret(&key("shared")));
        let mut moved = a.clone();
        moved.spec.access_key_secret_ref = Some(crate::resources::SecretKeyRef {
            name: "own".into(),
            key: "accessKey".into(),
        });
        assert_eq!(needs.follow(&Event::Apply(moved)), vec![key("own"), key("shared")]);
        assert!(needs.needs_secret(&key("shared")) && needs.needs_secret(&key("own")));
        let mut released = b.clone();
        released.metadata.deletion_timestamp = Some(Time("2026-11-20T13:00:00Z".parse().expect("time")));
        assert_eq!(needs.follow(&Event::Apply(released)), vec![key("shared")]);
        assert!(!needs.needs_secret(&key("shared")), "its restore is over");
        needs.follow(&Event::Init);
        needs.follow(&Event::InitDone);
        assert!(
            !needs.needs_secret(&key("own")),
            "a's deletion was missed, the re-list tells"
        );
    }

    #[test]
    fn a_deleting_object_needs_its_secret_until_its_restore_is_done() {
        let key = ("team".to_string(), "shared".to_string());
        let mut restoring = restoring_with("a", "shared");
        restoring.metadata.deletion_timestamp = Some(Time("2026-11-20T13:00:00Z".parse().expect("time")));
        restoring.finalizers_mut().push(FINALIZER.into());
        let needs = listed(&[&restoring]);
        assert!(needs.needs_secret(&key));
        assert_eq!(needs.follow(&Event::Delete(restoring)), vec![key.clone()]);
        assert!(!needs.needs_secret(&key), "the watch saw it go");
    }
}
