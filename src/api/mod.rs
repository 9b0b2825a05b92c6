//! Typed async client of the Edge Platform API.
//!
//! [`EdgeClient`] covers every operation; [`ApiError`] classifies every failure;
//! [`ClientConfig`] holds URLs, credentials, timeouts, retries and rate limits.

pub mod apps;
pub mod client;
pub mod config;
pub mod contract;
pub mod error;
pub mod limiter;
pub mod logging;
pub mod models;
pub mod operation;
pub mod probe;
pub mod pullzone;
pub mod shield;
pub mod transport;

pub use client::{EdgeClient, Hooks, RequestObserver, WriteGate, status_class};
pub use config::{AnswerCheck, ClientConfig, Credentials, PlainHttp, RetryPolicy, SecretFile, SecretValue, USER_AGENT};
pub use error::{ApiError, MAX_PLATFORM_TEXT, PlatformMessage, bounded_text};
pub use logging::LogQuery;
pub use operation::Operation;
pub use transport::{HttpsProxy, Transport, TransportFlags, TrustedRoots};
