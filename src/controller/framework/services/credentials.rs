//! Which platform client an object uses: the key in the Secret it references, or the
//! operator's own, each only where the operator is told it may be used.
//!
//! Secret data is read with a GET and kept per `resourceVersion`. The operator's one
//! Secret metadata watch ([`SecretIndex`]) tells the current version, so a reconcile of
//! an unchanged Secret makes no request to the apiserver, a rotated one is read again at
//! once, and the key of a Secret that is gone is dropped.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;
use kube::{Api, ResourceExt};

use crate::api::{Credentials, EdgeClient, SecretFile, SecretValue};
use crate::controller::framework::reasons::error::ReconcileError;
use crate::fairness::FairQueue;
use crate::resources::SecretKeyRef;

/// The longest access key read from a Secret: platform keys are tens of bytes, and a
/// key is cached per Secret reference, so a tenant's megabyte "key" is refused, never
/// held.
pub(crate) const MAX_ACCESS_KEY_BYTES: usize = 4096;

/// A set of namespaces given on the command line: names, or `*` for every namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum NamespaceSet {
    All,
    Only(BTreeSet<String>),
    #[default]
    None,
}

impl NamespaceSet {
    /// `*` anywhere means every namespace; no names means none.
    pub(crate) fn parse(names: &[String]) -> Self {
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

    pub(crate) fn contains(&self, namespace: &str) -> bool {
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

/// The metadata of the Secrets the operator may read, as its one Secret watch last
/// listed them: a re-list replaces the whole set, so a Secret deleted while the watch
/// was down is forgotten.
#[derive(Clone)]
pub(crate) struct SecretIndex {
    store: Store<PartialObjectMeta<Secret>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SecretMeta {
    pub resource_version: Option<String>,
    pub finalizers: Vec<String>,
}

impl SecretIndex {
    pub(crate) fn new(store: Store<PartialObjectMeta<Secret>>) -> Self {
        Self { store }
    }

    pub(crate) fn get(&self, namespace: &str, name: &str) -> Option<SecretMeta> {
        let secret = self.store.get(&ObjectRef::new(name).within(namespace))?;
        Some(SecretMeta {
            resource_version: secret.resource_version(),
            finalizers: secret.finalizers().to_vec(),
        })
    }

    fn contains(&self, namespace: &str, name: &str) -> bool {
        self.store.get(&ObjectRef::new(name).within(namespace)).is_some()
    }
}

/// The operator's own key: a file read again whenever it changes or the platform
/// rejects it.
pub(crate) struct DefaultKey(SecretFile);

impl DefaultKey {
    /// The key in `path`; fails now when the file cannot be read or is empty.
    pub(crate) fn file(path: PathBuf) -> Result<Self, String> {
        SecretFile::open(path, "access key").map(Self)
    }

    /// The key as it is now.
    pub(crate) fn current(&self) -> Result<SecretValue, String> {
        self.0.current()
    }

    /// The platform rejected the key: read the file again next time.
    fn forget(&self) {
        self.0.forget();
    }
}

/// A Secret's key as read, and when.
struct CachedKey {
    resource_version: Option<String>,
    read_at: tokio::time::Instant,
    key: SecretValue,
}

/// (namespace, Secret, key in the Secret).
type KeyRef = (String, String, String);

/// The keys read from Secrets, each valid for the Secret version it was read from.
#[derive(Default)]
struct KeyCache {
    keys: Mutex<HashMap<KeyRef, CachedKey>>,
}

impl KeyCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<KeyRef, CachedKey>> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key read from `resource_version` of its Secret, if read less than
    /// [`SECRET_DATA_TTL`] ago.
    fn current(&self, key: &KeyRef, resource_version: &Option<String>) -> Option<SecretValue> {
        self.lock()
            .get(key)
            .filter(|cached| &cached.resource_version == resource_version && cached.read_at.elapsed() < SECRET_DATA_TTL)
            .map(|cached| cached.key.clone())
    }

    /// Keeps `value`, and drops every key read [`SECRET_DATA_TTL`] ago or more (no
    /// longer served): what the cache holds is the keys read within the TTL, whichever
    /// keys of whichever Secrets the objects named meanwhile.
    fn insert(&self, key: KeyRef, resource_version: Option<String>, value: SecretValue) {
        let cached = CachedKey {
            resource_version,
            read_at: tokio::time::Instant::now(),
            key: value,
        };
        let mut keys = self.lock();
        keys.retain(|_, kept| kept.read_at.elapsed() < SECRET_DATA_TTL);
        keys.insert(key, cached);
    }

    fn forget(&self, key: &KeyRef) {
        self.lock().remove(key);
    }

    /// Keeps only the keys of Secrets for which `exists(namespace, name)` holds.
    fn retain_secrets(&self, exists: impl Fn(&str, &str) -> bool) {
        self.lock().retain(|(namespace, name, _), _| exists(namespace, name));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The access keys objects may use (the default key, the Secrets they reference) and a
/// platform client for each, within the namespaces each is allowed in.
pub(crate) struct AccessKeys {
    kube: kube::Client,
    /// The client whose credentials are replaced per object (pool, quota and hooks shared).
    platform: EdgeClient,
    default_key: Option<DefaultKey>,
    /// Namespaces whose objects may use the default key.
    default_key_namespaces: NamespaceSet,
    /// Namespaces whose Secrets the operator may read.
    secret_namespaces: NamespaceSet,
    pub secrets: SecretIndex,
    keys: KeyCache,
    /// Secret reads in flight: a Secret is read whole (up to the apiserver's 1.5 MiB),
    /// so at most [`SECRET_READS`] at once, handed to namespaces in turn.
    secret_reads: FairQueue,
}

/// Secrets read from the apiserver at once.
const SECRET_READS: usize = 4;

impl AccessKeys {
    pub(crate) fn new(
        kube: kube::Client,
        platform: EdgeClient,
        default_key: Option<DefaultKey>,
        secrets: SecretIndex,
    ) -> Self {
        Self {
            kube,
            platform,
            default_key,
            default_key_namespaces: NamespaceSet::None,
            secret_namespaces: NamespaceSet::None,
            secrets,
            keys: KeyCache::default(),
            secret_reads: FairQueue::new(SECRET_READS),
        }
    }

    /// Follows the Secret watch once its event is in the index: the keys of a Secret
    /// that is deleted, or missing from a re-list, are dropped.
    pub(crate) fn follow_secrets(&self, event: &Event<PartialObjectMeta<Secret>>) {
        match event {
            Event::Delete(secret) => {
                let (namespace, name) = (secret.namespace().unwrap_or_default(), secret.name_any());
                self.keys
                    .retain_secrets(|ns, n| (ns, n) != (namespace.as_str(), name.as_str()));
            }
            Event::InitDone => self.keys.retain_secrets(|ns, n| self.secrets.contains(ns, n)),
            Event::Apply(_) | Event::InitApply(_) | Event::Init => {}
        }
    }

    /// Only objects of `namespaces` may use the default key.
    pub(crate) fn with_default_key_namespaces(mut self, namespaces: NamespaceSet) -> Self {
        self.default_key_namespaces = namespaces;
        self
    }

    /// The base URL of the platform every key is used with.
    pub(crate) fn platform_url(&self) -> &str {
        &self.platform.config().base_url
    }

    /// Only Secrets of `namespaces` are read.
    pub(crate) fn with_secret_namespaces(mut self, namespaces: NamespaceSet) -> Self {
        self.secret_namespaces = namespaces;
        self
    }

    /// The platform client for an object in `namespace` referencing `secret`.
    pub(crate) async fn client_for<E>(
        &self,
        namespace: &str,
        secret: Option<&SecretKeyRef>,
    ) -> Result<EdgeClient, ReconcileError<E>> {
        let key = match secret {
            None => self.default_key_for(namespace)?,
            Some(reference) => self.secret_key(namespace, reference).await?,
        };
        Ok(self.platform.with_credentials(Credentials::AccessKey(key)))
    }

    fn default_key_for<E>(&self, namespace: &str) -> Result<SecretValue, ReconcileError<E>> {
        let Some(default_key) = &self.default_key else {
            return Err(ReconcileError::NoCredentials);
        };
        if !self.default_key_namespaces.contains(namespace) {
            return Err(ReconcileError::DefaultKeyNotAllowed(namespace.to_string()));
        }
        default_key.current().map_err(ReconcileError::DefaultKeyUnreadable)
    }

    async fn secret_key<E>(&self, namespace: &str, reference: &SecretKeyRef) -> Result<SecretValue, ReconcileError<E>> {
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
        let cached = || {
            let current = self.secrets.get(namespace, &reference.name)?;
            self.keys.current(&cache_key, &current.resource_version)
        };
        if let Some(key) = cached() {
            return Ok(key);
        }
        let _reading = self.secret_reads.enter(namespace).await;
        // Read by whoever held the turn before: many objects of one Secret read it once.
        if let Some(key) = cached() {
            return Ok(key);
        }
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), namespace);
        let secret = secrets
            .get_opt(&reference.name)
            .await?
            .ok_or_else(|| problem("not found".into()))?;
        let value = secret
            .data
            .as_ref()
            .and_then(|data| data.get(&reference.key))
            .ok_or_else(|| problem(format!("has no key {:?}", reference.key)))?;
        if value.0.len() > MAX_ACCESS_KEY_BYTES {
            return Err(problem(format!(
                "key {:?} is longer than {MAX_ACCESS_KEY_BYTES} bytes",
                reference.key
            )));
        }
        let key =
            String::from_utf8(value.0.clone()).map_err(|_| problem(format!("key {:?} is not UTF-8", reference.key)))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(problem(format!("key {:?} is empty", reference.key)));
        }
        let key = SecretValue::new(key);
        self.keys.insert(cache_key, secret.resource_version(), key.clone());
        Ok(key)
    }

    /// The platform rejected the credentials of an object in `namespace`: read them
    /// again at its next reconcile.
    pub(crate) fn rejected(&self, namespace: &str, secret: Option<&SecretKeyRef>) {
        match secret {
            None => {
                if let Some(key) = &self.default_key {
                    key.forget();
                }
            }
            Some(reference) => {
                self.keys
                    .forget(&(namespace.to_string(), reference.name.clone(), reference.key.clone()));
            }
        }
    }
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

    fn secret(name: &str, version: &str) -> PartialObjectMeta<Secret> {
        use kube::core::PartialObjectMetaExt;
        kube::api::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("team".into()),
            resource_version: Some(version.into()),
            ..Default::default()
        }
        .into_response_partial()
    }

    #[tokio::test]
    async fn a_re_list_forgets_secrets_deleted_meanwhile_and_their_keys_go_with_them() {
        let mut writer = kube::runtime::reflector::store::Writer::default();
        let index = SecretIndex::new(writer.as_reader());
        let kube =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().expect("url"))).expect("client");
        let platform = EdgeClient::new(crate::api::ClientConfig::without_credentials(
            "http://127.0.0.1:9",
            "http://127.0.0.1:9",
        ))
        .expect("platform client");
        let credentials = AccessKeys::new(kube, platform, None, index.clone());
        let follow = |writer: &mut kube::runtime::reflector::store::Writer<_>, event| {
            writer.apply_watcher_event(&event);
            credentials.follow_secrets(&event);
        };
        for event in [
            Event::Init,
            Event::InitApply(secret("kept", "1")),
            Event::InitApply(secret("deleted", "1")),
            Event::InitApply(secret("gone-in-a-gap", "1")),
            Event::InitDone,
        ] {
            follow(&mut writer, event);
        }
        for name in ["kept", "deleted", "gone-in-a-gap"] {
            let key = ("team".to_string(), name.to_string(), "accessKey".to_string());
            credentials.keys.insert(key, Some("1".into()), SecretValue::new("k"));
        }
        follow(&mut writer, Event::Delete(secret("deleted", "2")));
        assert_eq!(index.get("team", "deleted"), None);
        assert_eq!(credentials.keys.len(), 2, "the deleted Secret's key is dropped");
        for event in [Event::Init, Event::InitApply(secret("kept", "3")), Event::InitDone] {
            follow(&mut writer, event);
        }
        assert_eq!(index.get("team", "gone-in-a-gap"), None, "a re-list replaces the index");
        assert_eq!(
            index.get("team", "kept").and_then(|meta| meta.resource_version),
            Some("3".into())
        );
        assert_eq!(
            credentials.keys.len(),
            1,
            "only the key of a Secret still listed is kept"
        );
        let kept = ("team".to_string(), "kept".to_string(), "accessKey".to_string());
        assert!(
            credentials.keys.current(&kept, &Some("3".into())).is_none(),
            "a key read from an older version is not used"
        );
    }

    /// Credentials of namespace `team` over an apiserver that answers every read with
    /// `stored` (counted in the returned counter), and a Secret index holding `indexed`.
    fn reading(
        stored: &Secret,
        indexed: Option<PartialObjectMeta<Secret>>,
    ) -> (AccessKeys, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let answer = serde_json::to_value(stored).expect("a Secret");
        let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let kube = crate::controller::framework::mock_apiserver::client({
            let reads = reads.clone();
            move |_, _| {
                reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                (200, answer.clone())
            }
        });
        let mut writer = kube::runtime::reflector::store::Writer::<PartialObjectMeta<Secret>>::default();
        if let Some(indexed) = indexed {
            writer.apply_watcher_event(&Event::Apply(indexed));
        }
        let platform = EdgeClient::new(crate::api::ClientConfig::without_credentials(
            "http://127.0.0.1:9",
            "http://127.0.0.1:9",
        ))
        .expect("platform client");
        let credentials = AccessKeys::new(kube, platform, None, SecretIndex::new(writer.as_reader()))
            .with_secret_namespaces(NamespaceSet::parse(&["team".to_string()]));
        (credentials, reads)
    }

    #[tokio::test]
    async fn a_key_longer_than_the_bound_is_refused_and_not_cached() {
        let huge = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some("huge".into()),
                namespace: Some("team".into()),
                resource_version: Some("1".into()),
                ..Default::default()
            },
            data: Some(
                [(
                    "accessKey".to_string(),
                    k8s_openapi::ByteString(vec![b'k'; MAX_ACCESS_KEY_BYTES + 1]),
                )]
                .into(),
            ),
            ..Default::default()
        };
        let (credentials, _) = reading(&huge, None);
        let reference = SecretKeyRef {
            name: "huge".into(),
            key: "accessKey".into(),
        };
        let refused = credentials
            .secret_key::<std::convert::Infallible>("team", &reference)
            .await
            .map(|_| ())
            .map_err(|error| error.to_string());
        assert_eq!(
            refused,
            Err(format!(
                "Secret team/huge: key \"accessKey\" is longer than {MAX_ACCESS_KEY_BYTES} bytes"
            ))
        );
        assert_eq!(credentials.keys.len(), 0);
    }

    #[tokio::test]
    async fn objects_of_one_secret_reading_it_at_once_read_it_once() {
        let stored = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some("shared".into()),
                namespace: Some("team".into()),
                resource_version: Some("1".into()),
                ..Default::default()
            },
            data: Some([("accessKey".to_string(), k8s_openapi::ByteString(b"key".to_vec()))].into()),
            ..Default::default()
        };
        let (credentials, reads) = reading(&stored, Some(secret("shared", "1")));
        let reference = SecretKeyRef {
            name: "shared".into(),
            key: "accessKey".into(),
        };
        let all = (0..50).map(|_| credentials.secret_key::<std::convert::Infallible>("team", &reference));
        for read in futures::future::join_all(all).await {
            assert_eq!(read.map(|key| key.expose().to_string()).ok().as_deref(), Some("key"));
        }
        let reads = reads.load(std::sync::atomic::Ordering::SeqCst);
        assert!(reads <= SECRET_READS, "{reads} reads of one Secret");
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

    #[tokio::test(start_paused = true)]
    async fn keys_no_longer_served_are_dropped_as_others_are_read() {
        let cache = KeyCache::default();
        let key = |name: &str| ("ns".to_string(), name.to_string(), "accessKey".to_string());
        for i in 0..100 {
            cache.insert(key(&format!("s{i}")), Some("1".into()), SecretValue::new("k"));
        }
        tokio::time::advance(SECRET_DATA_TTL).await;
        cache.insert(key("fresh"), Some("1".into()), SecretValue::new("k"));
        assert_eq!(cache.len(), 1, "only the key read within the TTL");
    }
}
