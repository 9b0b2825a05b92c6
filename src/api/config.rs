//! Client configuration. There is no built-in host: the base and logging URLs are
//! always given. Credentials are redacted from `Debug` and never logged.

use std::fmt;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use governor::Quota;

use super::transport::Transport;

/// A credential value; its `Debug` output is redacted and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value, to put in a request header and nowhere else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// A credential kept in a file, read again whenever the file changes (Kubernetes
/// replaces a mounted Secret's files when the Secret changes) or after [`forget`].
///
/// [`forget`]: SecretFile::forget
#[derive(Debug)]
pub struct SecretFile {
    path: PathBuf,
    /// What the file holds, for error messages ("access key", "admin token").
    what: &'static str,
    read: Mutex<Option<(FileStamp, SecretValue)>>,
}

/// What tells that a file changed without reading it.
type FileStamp = (Option<SystemTime>, u64);

impl SecretFile {
    /// The credential in `path`; fails now when the file cannot be read or is empty.
    pub fn open(path: PathBuf, what: &'static str) -> Result<Self, String> {
        let file = Self {
            path,
            what,
            read: Mutex::new(None),
        };
        file.current()?;
        Ok(file)
    }

    /// The credential as the file holds it now; the file is read only when its
    /// modification time or size changed.
    pub fn current(&self) -> Result<SecretValue, String> {
        let unreadable =
            |e: std::io::Error| format!("the {} file {} cannot be read: {e}", self.what, self.path.display());
        let metadata = std::fs::metadata(&self.path).map_err(unreadable)?;
        let stamp = (metadata.modified().ok(), metadata.len());
        let mut read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, secret)) = read.as_ref()
            && *seen == stamp
        {
            return Ok(secret.clone());
        }
        let raw = std::fs::read_to_string(&self.path).map_err(unreadable)?;
        let value = raw.trim();
        if value.is_empty() {
            return Err(format!("the {} file {} is empty", self.what, self.path.display()));
        }
        let secret = SecretValue::new(value);
        *read = Some((stamp, secret.clone()));
        Ok(secret)
    }

    /// The credential was rejected: read the file again next time.
    pub fn forget(&self) {
        *self.read.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// How requests authenticate.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Credentials {
    /// `AccessKey` header: accepted by every endpoint.
    AccessKey(SecretValue),
    /// `Authorization: Bearer` JWT: accepted by the logging API only.
    Bearer(SecretValue),
}

/// The longest `Retry-After` the client believes; larger values are read as this.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// Retries of retryable failures: exponential backoff with jitter, never shorter than
/// the platform's `Retry-After`.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retries).
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// The longest wait inside one call: a `Retry-After` beyond it ends the call with
    /// `RateLimited`, so the caller decides when to come back instead of sleeping.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
            max_wait: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The delay before retry number `retry` (0-based): `initial * 2^retry`, capped,
    /// with "equal jitter" (a random point in the upper half).
    pub fn backoff(&self, retry: u32) -> Duration {
        self.backoff_with_jitter(retry, rand::random::<f64>())
    }

    /// [`Self::backoff`] at the point `jitter` (0 to 1) of the upper half.
    pub fn backoff_with_jitter(&self, retry: u32, jitter: f64) -> Duration {
        let exponential = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_backoff);
        let half = exponential / 2;
        half + half.mul_f64(jitter.clamp(0.0, 1.0))
    }
}

/// The logging API allows 30 requests per sliding 10 s per Pull Zone. The default
/// quota stays below it even when requests bunch up in transit: a burst of 5, then one
/// every 10 s / 24, so any 10 s window holds at most 29.
pub(crate) fn default_logging_quota() -> Quota {
    Quota::with_period(Duration::from_millis(10_000 / 24))
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(NonZeroU32::new(5).unwrap_or(NonZeroU32::MIN))
}

/// A check of an operation's answer body: `Err` says what is wrong with it.
pub type AnswerCheck = fn(crate::api::Operation, &[u8]) -> Result<(), String>;

/// Everything the client needs to reach the platform.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Main API base URL, e.g. `https://api.example.net`.
    pub base_url: String,
    /// Logging API base URL.
    pub logging_url: String,
    /// `None`: the client can only be given credentials ([`crate::api::EdgeClient::with_credentials`]);
    /// a call without fails before anything is sent.
    pub credentials: Option<Credentials>,
    /// Whole-request timeout.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub user_agent: String,
    pub retry: RetryPolicy,
    /// Optional limit on all calls of this client together.
    pub global_quota: Option<Quota>,
    /// Per-Pull-Zone limit of logging calls.
    pub logging_quota: Quota,
    /// The largest answer body read, whatever the operation allows; a larger one fails
    /// the call with `Decode`.
    pub max_body_bytes: usize,
    /// The most bytes of answers that this client and its derived clients hold at
    /// once, while reading and decoding them; a call waits (at most `timeout`) for room.
    pub answer_budget_bytes: usize,
    /// Where plain `http` may carry credentials.
    pub plain_http: PlainHttp,
    /// A check of every answer before it is decoded; a failed one fails the call with
    /// `Decode`. Tests of a platform or an emulator set
    /// [`crate::api::contract::check_answer`]: every answer of an operation with a
    /// published schema must have the platform's form. `None`: the client reads
    /// leniently, missing and unknown members never fail a read (and a binary that sets
    /// none does not carry the schemas).
    pub answer_check: Option<AnswerCheck>,
    /// The certificate authorities trusted, and the proxy of https requests.
    pub transport: Transport,
}

/// Default of [`ClientConfig::max_body_bytes`]: far above any page the platform sends.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;
/// Default of [`ClientConfig::answer_budget_bytes`].
pub(crate) const DEFAULT_ANSWER_BUDGET_BYTES: usize = 64 << 20;

/// Where a plain `http` URL is accepted: credentials travel in its headers in clear
/// text. `https` is accepted everywhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PlainHttp {
    /// Loopback addresses and `localhost` only.
    #[default]
    LoopbackOnly,
    /// Also cluster-internal addresses: private and unique-local IPs (not link-local:
    /// the metadata endpoints live there), single-label names and Service names
    /// (`<service>.<namespace>.svc`, `<service>.<namespace>.svc.cluster.local`).
    InCluster,
}

impl PlainHttp {
    /// What `--allow-http-in-cluster` asks for.
    pub fn allowing_in_cluster(allowed: bool) -> Self {
        if allowed {
            PlainHttp::InCluster
        } else {
            PlainHttp::LoopbackOnly
        }
    }

    /// Whether `url` may be used: any `https` URL, or an `http` one this allows.
    pub fn check(self, url: &reqwest::Url) -> Result<(), String> {
        use std::net::IpAddr;
        use url::Host;
        match url.scheme() {
            "https" => return Ok(()),
            "http" => {}
            other => return Err(format!("the scheme {other:?} is not supported; use https")),
        }
        let private = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => v4.is_private(),
            IpAddr::V6(v6) => v6.is_unique_local(),
        };
        let (loopback, in_cluster) = match url.host() {
            Some(Host::Ipv4(ip)) => (ip.is_loopback(), private(IpAddr::V4(ip))),
            Some(Host::Ipv6(ip)) => (ip.is_loopback(), private(IpAddr::V6(ip))),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                let labels: Vec<&str> = name.split('.').collect();
                let service = match labels.as_slice() {
                    [_] => true,
                    [_, _, "svc"] | [_, _, "svc", "cluster", "local"] => labels.iter().all(|l| !l.is_empty()),
                    _ => false,
                };
                (name == "localhost", service)
            }
            None => (false, false),
        };
        match (loopback, in_cluster, self) {
            (true, _, _) | (_, true, PlainHttp::InCluster) => Ok(()),
            (_, true, PlainHttp::LoopbackOnly) => Err(
                "plain http would carry the access key in clear text; use https, or allow http to cluster-internal \
                 addresses explicitly (--allow-http-in-cluster, chart value platform.allowHttpInCluster)"
                    .into(),
            ),
            _ => Err(
                "plain http would carry the access key in clear text; use https (http is accepted for \
                 loopback addresses only, and for cluster-internal ones when allowed explicitly)"
                    .into(),
            ),
        }
    }
}
/// The `User-Agent` of the product's requests, to the platform and to the apiserver.
pub const USER_AGENT: &str = concat!("edge-operator/", env!("CARGO_PKG_VERSION"));

impl ClientConfig {
    pub fn new(base_url: impl Into<String>, logging_url: impl Into<String>, credentials: Credentials) -> Self {
        Self {
            credentials: Some(credentials),
            ..Self::without_credentials(base_url, logging_url)
        }
    }

    /// A configuration whose clients get their credentials later, one per caller.
    pub fn without_credentials(base_url: impl Into<String>, logging_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            logging_url: logging_url.into().trim_end_matches('/').to_string(),
            credentials: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            user_agent: USER_AGENT.to_string(),
            retry: RetryPolicy::default(),
            global_quota: None,
            logging_quota: default_logging_quota(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            answer_budget_bytes: DEFAULT_ANSWER_BUDGET_BYTES,
            plain_http: PlainHttp::default(),
            answer_check: None,
            transport: Transport::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(plain_http: PlainHttp, url: &str) -> Result<(), String> {
        plain_http.check(&reqwest::Url::parse(url).expect("url"))
    }

    #[test]
    fn plain_http_is_for_loopback_and_for_the_cluster_only_when_allowed() {
        for url in [
            "https://api.example.net",
            "https://10.0.0.1",
            "http://127.0.0.1:8080",
            "http://127.9.0.1",
            "http://[::1]:80",
            "http://localhost:1",
        ] {
            assert_eq!(check(PlainHttp::LoopbackOnly, url), Ok(()), "{url}");
        }
        let in_cluster = [
            "http://10.96.0.12:8080",
            "http://172.20.1.1",
            "http://192.168.1.2",
            "http://[fd00::1]",
            "http://edge-sim:8080",
            "http://edge-sim.demo.svc:8080",
            "http://edge-sim.demo.svc.cluster.local:8080",
        ];
        for url in in_cluster {
            let refused = check(PlainHttp::LoopbackOnly, url).expect_err(url);
            assert!(refused.contains("--allow-http-in-cluster"), "{url}: {refused}");
            assert_eq!(check(PlainHttp::InCluster, url), Ok(()), "{url}");
        }
        for url in [
            "http://api.example.net",
            "http://8.8.8.8",
            "http://svc.example.com",
            "http://evil.svc.example.com",
            "http://a.b.svc.example.com",
            "http://edge-sim.demo.svc.cluster.local.example.com",
            "http://169.254.169.254/latest/meta-data",
            "http://[fe80::1]",
            "http://..svc",
            "ftp://127.0.0.1",
        ] {
            assert!(check(PlainHttp::InCluster, url).is_err(), "{url}");
        }
    }
}
