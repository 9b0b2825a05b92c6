//! The in-use finalizer on Secrets that restoring AccessListConfigs need, so a
//! namespace deletion removes such a Secret only after those objects are gone.

use std::collections::BTreeSet;

use kube::ResourceExt;
use kube::api::{Patch, PatchParams};

use super::FINALIZER;
use super::restore::wants_finalizer;
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::pipeline::Io;
use crate::controller::framework::status::is_paused;
use crate::crd::access_list_config::AccessListConfig;

/// Finalizer the operator puts on a Secret that objects needing a Restore use: a
/// namespace deletion then removes the Secret only after those objects are gone, as
/// pvc-protection does for volumes.
pub const SECRET_IN_USE_FINALIZER: &str = "edgeplatform.io/credentials-in-use";

/// Whose need a protection pass counts for the object being reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// As the object is now.
    Current,
    /// Its restore is over: it needs nothing any more.
    Released,
}

/// The Secret `object` needs protected while it may still have to restore: it manages,
/// restores on delete, is not paused, and (when deleting) still holds the finalizer.
pub fn protected_secret(object: &AccessListConfig) -> Option<&str> {
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

/// Which Secrets of a namespace to add the in-use finalizer to and remove it from.
pub fn protection_changes(needed: &BTreeSet<String>, protected: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    let add = needed.difference(protected).cloned().collect();
    let remove = protected.difference(needed).cloned().collect();
    (add, remove)
}

pub(super) async fn sync_secret_protection(
    object: &AccessListConfig,
    io: &Io<'_, AccessListConfig>,
    stage: Stage,
) -> Result<(), ReconcileError> {
    if !io.ctx.settings.protect_secrets {
        return Ok(());
    }
    let uid = object.uid().unwrap_or_default();
    let mut needed = io.state.claims.secrets_needed(&io.namespace, &uid);
    if let Some(secret) = protected_secret(object).filter(|_| stage == Stage::Current) {
        needed.insert(secret.to_string());
    }
    let protected: BTreeSet<String> = io
        .ctx
        .credentials
        .secrets
        .with_finalizer(&io.namespace, SECRET_IN_USE_FINALIZER)
        .into_iter()
        .collect();
    let (add, remove) = protection_changes(&needed, &protected);
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(io.ctx.kube.clone(), &io.namespace);
    for (names, patch) in [
        (
            add,
            serde_json::json!({ "metadata": { "finalizers": [SECRET_IN_USE_FINALIZER] } }),
        ),
        (
            remove,
            serde_json::json!({ "metadata": { "$deleteFromPrimitiveList/finalizers": [SECRET_IN_USE_FINALIZER] } }),
        ),
    ] {
        for name in names {
            match secrets
                .patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                Err(kube::Error::Api(response)) if response.code == 404 => {}
                other => drop(other?),
            }
        }
    }
    Ok(())
}
