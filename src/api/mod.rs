//! Typed async client of the Edge Platform API.
//!
//! [`EdgeClient`] covers every operation; [`ApiError`] classifies every failure;
//! [`ClientConfig`] holds URLs, credentials, timeouts, retries and rate limits.

pub(crate) mod apps;
pub(crate) mod client;
pub(crate) mod config;
pub mod contract;
pub(crate) mod error;
pub(crate) mod limiter;
pub(crate) mod logging;
pub mod models;
pub(crate) mod operation;
pub(crate) mod probe;
pub(crate) mod pullzone;
pub(crate) mod shared_reads;
pub(crate) mod shield;
pub(crate) mod transport;

pub use client::{EdgeClient, Hooks, RequestObserver, WriteGate, status_class};
pub use config::{AnswerCheck, ClientConfig, Credentials, PlainHttp, RetryPolicy, SecretFile, SecretValue, USER_AGENT};
pub use error::{ApiError, ApiFailure, MAX_PLATFORM_TEXT, PlatformMessage, bounded_text};
pub use logging::LogQuery;
pub use operation::Operation;
pub use transport::{HttpsProxy, Transport, TransportFlags, TrustedRoots};
