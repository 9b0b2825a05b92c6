//! Which platform client an object uses: the key in the Secret it references, or the
//! operator's own.

use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::Api;

use super::error::ReconcileError;
use crate::api::{Credentials as ApiCredentials, EdgeClient, Secret};
use crate::crd::SecretKeyRef;

pub struct Credentials {
    kube: kube::Client,
    /// Client with the operator's own credentials (unusable when there is no default key).
    platform: EdgeClient,
    has_default_key: bool,
    /// Namespaces whose objects may use the default key; empty: every namespace.
    default_key_namespaces: Vec<String>,
}

impl Credentials {
    pub fn new(kube: kube::Client, platform: EdgeClient, has_default_key: bool) -> Self {
        Self {
            kube,
            platform,
            has_default_key,
            default_key_namespaces: Vec::new(),
        }
    }

    /// Only objects of `namespaces` may use the default key (none given: all).
    pub fn with_default_key_namespaces(mut self, namespaces: Vec<String>) -> Self {
        self.default_key_namespaces = namespaces;
        self
    }

    /// The platform client for an object in `namespace` referencing `secret`.
    pub async fn client_for(
        &self,
        namespace: &str,
        secret: Option<&SecretKeyRef>,
    ) -> Result<EdgeClient, ReconcileError> {
        let Some(reference) = secret else {
            let allowed =
                self.default_key_namespaces.is_empty() || self.default_key_namespaces.iter().any(|n| n == namespace);
            return match (self.has_default_key, allowed) {
                (true, true) => Ok(self.platform.clone()),
                (true, false) => Err(ReconcileError::DefaultKeyNotAllowed(namespace.to_string())),
                (false, _) => Err(ReconcileError::NoCredentials),
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
        Ok(self
            .platform
            .with_credentials(ApiCredentials::AccessKey(Secret::new(key))))
    }
}

/// A stable identity of the client's credentials that does not reveal them.
pub fn credential_id(client: &EdgeClient) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match &client.config().credentials {
        ApiCredentials::AccessKey(key) | ApiCredentials::Bearer(key) => key.expose().hash(&mut hasher),
    }
    format!("{:016x}", hasher.finish())
}
