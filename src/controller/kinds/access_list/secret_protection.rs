//! The in-use finalizer on Secrets that restoring AccessListConfigs need, so a
//! namespace deletion removes such a Secret only after those objects are gone.
//!
//! It is reconciled from the Secret's side (`controller::runtime::secret_protection`),
//! as Kubernetes' pvc-protection does for volumes: whenever a Secret, or an object that
//! references one, changes or goes, the caches decide whether any live object still
//! needs the Secret. An object's own pass only adds the finalizer, before the first
//! write that may need a restore.

use super::settings::SecretFinalizer;
use std::sync::{Mutex, PoisonError};

use futures::channel::mpsc;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;

use super::restore::FINALIZER;
use super::restore::wants_finalizer;
use super::secret_needs::SecretKey;
use crate::controller::framework::prelude::{Context, Failure};
use crate::controller::kinds::access_list::resource::AccessListConfig;
use crate::resources::is_paused;

/// Secret changes the AccessListConfig watch may queue before the protection
/// controller takes them; beyond it a change waits for the Secret's periodic check.
const TRIGGER_BUFFER: usize = 1024;

/// The Secret `object` needs protected while it may still have to restore: it manages,
/// restores on delete, is not paused, and (when deleting) still holds the finalizer.
pub(super) fn protected_secret(object: &AccessListConfig) -> Option<&str> {
    let deleting = object.metadata.deletion_timestamp.is_some();
    let holds = object.finalizers().iter().any(|f| f == FINALIZER);
    let needs = wants_finalizer(object) && !is_paused(object) && (!deleting || holds);
    object
        .spec
        .access_key_secret_ref
        .as_ref()
        .filter(|_| needs)
        .map(|r| r.name.as_str())
}

/// What to do with a Secret's in-use finalizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProtectionChange {
    Add,
    Remove,
}

impl ProtectionChange {
    /// The change that makes the finalizer present exactly when the Secret is needed.
    pub(crate) fn of(needed: bool, protected: bool) -> Option<Self> {
        match (needed, protected) {
            (true, false) => Some(Self::Add),
            (false, true) => Some(Self::Remove),
            _ => None,
        }
    }

    fn patch(self, finalizer: &SecretFinalizer) -> serde_json::Value {
        let finalizer = finalizer.as_str();
        match self {
            Self::Add => serde_json::json!({ "metadata": { "finalizers": [finalizer] } }),
            Self::Remove => {
                serde_json::json!({ "metadata": { "$deleteFromPrimitiveList/finalizers": [finalizer] } })
            }
        }
    }
}

/// Adds or removes the in-use finalizer of a Secret; one already gone is left so.
pub(crate) async fn change_protection(
    kube: &kube::Client,
    (namespace, name): &SecretKey,
    change: ProtectionChange,
    finalizer: &SecretFinalizer,
) -> Result<(), Failure<AccessListConfig>> {
    let secrets: kube::Api<Secret> = kube::Api::namespaced(kube.clone(), namespace);
    let patch = change.patch(finalizer);
    match secrets
        .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
    {
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
        other => other.map(drop).map_err(Failure::<AccessListConfig>::from),
    }
}

/// An object's pass: protects the Secret it needs before anything it writes may need a
/// restore. Removal is the Secret's own reconcile's to decide.
pub(super) async fn protect_own_secret(
    object: &AccessListConfig,
    cx: &Context<'_, AccessListConfig>,
) -> Result<(), Failure<AccessListConfig>> {
    let Some(secret) = protected_secret(object).filter(|_| cx.settings.protect_secrets) else {
        return Ok(());
    };
    let finalizer = &cx.settings.secret_finalizer;
    let protected = cx
        .shared
        .access_keys
        .secrets
        .get(&cx.namespace, secret)
        .is_some_and(|meta| meta.finalizers.iter().any(|f| f == finalizer.as_str()));
    if protected {
        return Ok(());
    }
    change_protection(
        &cx.shared.kube,
        &(cx.namespace.clone(), secret.to_string()),
        ProtectionChange::Add,
        finalizer,
    )
    .await
}

/// The Secrets whose need the AccessListConfig watch saw change, for the protection
/// controller.
pub struct SecretTriggers {
    sender: Mutex<mpsc::Sender<SecretKey>>,
    receiver: Mutex<Option<mpsc::Receiver<SecretKey>>>,
}

impl Default for SecretTriggers {
    fn default() -> Self {
        let (sender, receiver) = mpsc::channel(TRIGGER_BUFFER);
        Self {
            sender: Mutex::new(sender),
            receiver: Mutex::new(Some(receiver)),
        }
    }
}

impl SecretTriggers {
    pub(super) fn send(&self, secrets: Vec<SecretKey>) {
        let mut sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        for secret in secrets {
            if sender.try_send(secret).is_err() {
                tracing::debug!("Secret protection queue full; the Secret's periodic check covers it");
            }
        }
    }

    /// The Secrets to look at, for the one protection controller (`None` once taken).
    pub fn take(&self) -> Option<impl futures::Stream<Item = ObjectRef<PartialObjectMeta<Secret>>> + use<>> {
        use futures::StreamExt;
        let receiver = self.receiver.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        Some(receiver.map(|(namespace, name)| ObjectRef::new(&name).within(&namespace)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::spec;
    use super::*;
    use crate::controller::kinds::access_list::resource::DeletionPolicy;

    #[test]
    fn the_finalizer_is_present_exactly_while_the_secret_is_needed() {
        assert_eq!(ProtectionChange::of(true, false), Some(ProtectionChange::Add));
        assert_eq!(ProtectionChange::of(false, true), Some(ProtectionChange::Remove));
        assert_eq!(ProtectionChange::of(true, true), None);
        assert_eq!(ProtectionChange::of(false, false), None);
    }

    #[test]
    fn an_object_needs_its_secret_while_it_may_restore() {
        let mut object = AccessListConfig::new("x", spec(true, None));
        object.spec.deletion_policy = DeletionPolicy::Restore;
        object.spec.access_key_secret_ref = Some(crate::resources::SecretKeyRef {
            name: "key".into(),
            key: "accessKey".into(),
        });
        assert_eq!(protected_secret(&object), Some("key"));
        let mut paused = object.clone();
        paused
            .annotations_mut()
            .insert("edgeplatform.io/paused".into(), "true".into());
        assert_eq!(protected_secret(&paused), None, "pause releases");
        let mut orphan = object.clone();
        orphan.spec.deletion_policy = DeletionPolicy::Orphan;
        assert_eq!(protected_secret(&orphan), None, "policy change releases");
        let mut deleting = object.clone();
        deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-11-20T12:00:00Z".parse().expect("time"),
        ));
        assert_eq!(protected_secret(&deleting), None, "restore done: finalizer gone");
        deleting.finalizers_mut().push(FINALIZER.into());
        assert_eq!(protected_secret(&deleting), Some("key"), "restore pending");
    }
}
