//! Which platform client an object uses: the key in the Secret it references, or the
//! operator's own, each only where the operator is told it may be used.
//!
//! Secret data is read with a GET and kept per `resourceVersion`. The Secret metadata
//! watch ([`SecretIndex`]) tells the current version, so a reconcile of an unchanged
//! Secret makes no request to the apiserver and a rotated one is read again at once.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;
use kube::{Api, ResourceExt};

use super::error::ReconcileError;
use crate::api::{Credentials as ApiCredentials, EdgeClient, Secret, SecretFile};
use crate::crd::SecretKeyRef;

/// A set of namespaces given on the command line: names, or `*` for every namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NamespaceSet {
    All,
    Only(BTreeSet<String>),
    #[default]
    None,
}

impl NamespaceSet {
    /// `*` anywhere means every namespace; no names means none.
    pub fn parse(names: &[String]) -> Self {
        let names: BTreeSet<String> = names
            .iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        if names.contains("*") {
            NamespaceSet::All
        } else if names.is_empty() {
            NamespaceSet::None
        } else {
            NamespaceSet::Only(names)
        }
    }

    pub fn contains(&self, namespace: &str) -> bool {
        match self {
            NamespaceSet::All => true,
            NamespaceSet::Only(names) => names.contains(namespace),
            NamespaceSet::None => false,
        }
    }
}

/// The longest a Secret's data is used without reading it again, should its watch
/// have missed a change.
const SECRET_DATA_TTL: Duration = Duration::from_secs(600);

/// What the Secret metadata watch says about each Secret: its `resourceVersion` and
/// its finalizers.
#[derive(Default)]
pub struct SecretIndex {
    secrets: Mutex<HashMap<(String, String), SecretMeta>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMeta {
    pub resource_version: Option<String>,
    pub finalizers: Vec<String>,
}

impl SecretIndex {
    /// Follows one Secret metadata watch.
    pub fn follow(&self, event: &Event<PartialObjectMeta<KubeSecret>>) {
        let mut secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Apply(secret) | Event::InitApply(secret) => {
                let meta = SecretMeta {
                    resource_version: secret.resource_version(),
                    finalizers: secret.finalizers().to_vec(),
                };
                secrets.insert((secret.namespace().unwrap_or_default(), secret.name_any()), meta);
            }
            Event::Delete(secret) => {
                secrets.remove(&(secret.namespace().unwrap_or_default(), secret.name_any()));
            }
            Event::Init | Event::InitDone => {}
        }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<SecretMeta> {
        let secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        secrets.get(&(namespace.to_string(), name.to_string())).cloned()
    }

    /// The Secrets of `namespace` that carry `finalizer`.
    pub fn with_finalizer(&self, namespace: &str, finalizer: &str) -> Vec<String> {
        let secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        secrets
            .iter()
            .filter(|((ns, _), meta)| ns == namespace && meta.finalizers.iter().any(|f| f == finalizer))
            .map(|((_, name), _)| name.clone())
            .collect()
    }
}

/// The operator's own key: fixed, or a file read again whenever it changes or the
/// platform rejects it.
pub enum DefaultKey {
    Fixed(Secret),
    File(SecretFile),
}

impl DefaultKey {
    /// The key in `path`; fails now when the file cannot be read or is empty.
    pub fn file(path: PathBuf) -> Result<Self, String> {
        SecretFile::open(path, "access key").map(Self::File)
    }

    /// The key as it is now.
    pub fn current(&self) -> Result<Secret, String> {
        match self {
            DefaultKey::Fixed(key) => Ok(key.clone()),
            DefaultKey::File(file) => file.current(),
        }
    }

    /// The platform rejected the key: read the file again next time.
    fn forget(&self) {
        if let DefaultKey::File(file) = self {
            file.forget();
        }
    }
}

/// A Secret's key as read, and when.
struct CachedKey {
    resource_version: Option<String>,
    read_at: tokio::time::Instant,
    key: Secret,
}

pub struct Credentials {
    kube: kube::Client,
    /// The client whose credentials are replaced per object (pool, quota and hooks shared).
    platform: EdgeClient,
    default_key: Option<DefaultKey>,
    /// Namespaces whose objects may use the default key.
    default_key_namespaces: NamespaceSet,
    /// Namespaces whose Secrets the operator may read.
    secret_namespaces: NamespaceSet,
    pub secrets: SecretIndex,
    cache: Mutex<HashMap<(String, String, String), CachedKey>>,
}

impl Credentials {
    pub fn new(kube: kube::Client, platform: EdgeClient, default_key: Option<DefaultKey>) -> Self {
        Self {
            kube,
            platform,
            default_key,
            default_key_namespaces: NamespaceSet::None,
            secret_namespaces: NamespaceSet::None,
            secrets: SecretIndex::default(),
            cache: Mutex::default(),
        }
    }

    /// Only objects of `namespaces` may use the default key.
    pub fn with_default_key_namespaces(mut self, namespaces: NamespaceSet) -> Self {
        self.default_key_namespaces = namespaces;
        self
    }

    /// Only Secrets of `namespaces` are read.
    pub fn with_secret_namespaces(mut self, namespaces: NamespaceSet) -> Self {
        self.secret_namespaces = namespaces;
        self
    }

    /// The platform client for an object in `namespace` referencing `secret`.
    pub async fn client_for(
        &self,
        namespace: &str,
        secret: Option<&SecretKeyRef>,
    ) -> Result<EdgeClient, ReconcileError> {
        let key = match secret {
            None => self.default_key_for(namespace)?,
            Some(reference) => self.secret_key(namespace, reference).await?,
        };
        Ok(self.platform.with_credentials(ApiCredentials::AccessKey(key)))
    }

    fn default_key_for(&self, namespace: &str) -> Result<Secret, ReconcileError> {
        let Some(default_key) = &self.default_key else {
            return Err(ReconcileError::NoCredentials);
        };
        if !self.default_key_namespaces.contains(namespace) {
            return Err(ReconcileError::DefaultKeyNotAllowed(namespace.to_string()));
        }
        default_key.current().map_err(ReconcileError::DefaultKeyUnreadable)
    }

    async fn secret_key(&self, namespace: &str, reference: &SecretKeyRef) -> Result<Secret, ReconcileError> {
        let problem = |problem: String| ReconcileError::Credentials {
            namespace: namespace.to_string(),
            name: reference.name.clone(),
            problem,
        };
        if !self.secret_namespaces.contains(namespace) {
            return Err(problem(
                "the operator is not granted Secrets of this namespace (see the chart's secretAccess)".into(),
            ));
        }
        let cache_key = (namespace.to_string(), reference.name.clone(), reference.key.clone());
        let current = self.secrets.get(namespace, &reference.name);
        if let Some(current) = &current {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(cached) = cache.get(&cache_key)
                && cached.resource_version == current.resource_version
                && cached.read_at.elapsed() < SECRET_DATA_TTL
            {
                return Ok(cached.key.clone());
            }
        }
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
        let key = Secret::new(key);
        let cached = CachedKey {
            resource_version: secret.resource_version(),
            read_at: tokio::time::Instant::now(),
            key: key.clone(),
        };
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(cache_key, cached);
        Ok(key)
    }

    /// The platform rejected the credentials of an object in `namespace`: read them
    /// again at its next reconcile.
    pub fn rejected(&self, namespace: &str, secret: Option<&SecretKeyRef>) {
        match secret {
            None => {
                if let Some(key) = &self.default_key {
                    key.forget();
                }
            }
            Some(reference) => {
                let cache_key = (namespace.to_string(), reference.name.clone(), reference.key.clone());
                self.cache
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&cache_key);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_means_every_namespace_and_nothing_means_none() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(NamespaceSet::parse(&names(&["*"])).contains("any"));
        assert!(!NamespaceSet::parse(&[]).contains("default"));
        let only = NamespaceSet::parse(&names(&["team-a", " team-b "]));
        assert!(only.contains("team-b") && !only.contains("team-c"));
    }

    #[test]
    fn the_key_file_is_read_again_when_it_changes_or_is_rejected() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("accessKey");
        std::fs::write(&path, "first-key\n").expect("write");
        let key = DefaultKey::file(path.clone()).expect("readable");
        assert_eq!(key.current().expect("key").expose(), "first-key");
        std::fs::write(&path, "second-key-longer").expect("rotate");
        assert_eq!(key.current().expect("key").expose(), "second-key-longer");
        std::fs::write(&path, "third-key-longer!").expect("rotate, same length");
        key.forget();
        assert_eq!(key.current().expect("key").expose(), "third-key-longer!");
        std::fs::write(&path, "  \n").expect("empty");
        assert!(key.current().expect_err("empty").contains("is empty"));
        assert!(DefaultKey::file(path).is_err(), "a missing file fails at start");
    }
}
