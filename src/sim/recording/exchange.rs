//! A recording on disk: one JSON file per exchange under `exchanges/`, the fixtures
//! document rebuilt from the answers (`fixtures.yaml`) and the events and log entries
//! the answers held (`data.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::models::logging::LogEntry;
use crate::sim::events::EventInput;

pub(crate) const EXCHANGES_DIR: &str = "exchanges";
pub(crate) const FIXTURES_FILE: &str = "fixtures.yaml";
pub(crate) const DATA_FILE: &str = "data.json";
/// The most exchanges a recording holds.
pub(crate) const MAX_EXCHANGES: usize = 10_000;
/// The `AccessKey` of the account a recording's fixtures describe.
pub(crate) const RECORDING_ACCESS_KEY: &str = "recorded-account";

/// One request and the answer it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Exchange {
    /// When the request was made: the replay runs edge-sim's clock at this time.
    pub time: DateTime<Utc>,
    pub request: RecordedRequest,
    pub response: RecordedResponse,
    /// For a grouped search: what the recorder read of the events its answer summarised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarised: Option<Summarised>,
}

/// The events a grouped search summarised, as far as the recorder read them (flat
/// pages of the same window and filters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Summarised {
    /// The events in the window and filters (the flat search's `total`); none when no
    /// flat page was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
    /// Of those, how many the recording holds.
    pub read: u64,
}

impl Summarised {
    /// Whether the recording holds every event the grouped answer summarised, so a
    /// replay can give the same answer.
    pub(crate) fn is_complete(&self) -> bool {
        self.events.is_some_and(|events| self.read >= events)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RecordedRequest {
    pub method: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "SentCredentials::is_account_key")]
    pub credentials: SentCredentials,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

/// The credentials a recorded request carried (never their value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) enum SentCredentials {
    /// The recorded account's `AccessKey`.
    #[default]
    AccountKey,
    /// No credentials.
    None,
    /// An `AccessKey` that no account has.
    UnknownKey,
}

impl SentCredentials {
    fn is_account_key(&self) -> bool {
        *self == SentCredentials::AccountKey
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RecordedResponse {
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<String>,
    /// A JSON body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// A body that is not JSON (the legacy log files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A body as a recording keeps it: JSON when it parses, else text; nothing when empty.
pub(crate) fn recorded_body(bytes: &[u8]) -> (Option<Value>, Option<String>) {
    if bytes.is_empty() {
        return (None, None);
    }
    match serde_json::from_slice(bytes) {
        Ok(value) => (Some(value), None),
        Err(_) => (None, Some(String::from_utf8_lossy(bytes).into_owned())),
    }
}

/// The events and log entries a recording's answers held, loaded beside its fixtures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RecordedData {
    /// Events by Shield Zone.
    #[serde(default)]
    pub events: BTreeMap<i64, Vec<EventInput>>,
    /// Log entries by Pull Zone.
    #[serde(default)]
    pub logs: BTreeMap<i64, Vec<LogEntry>>,
}

/// Why a recording cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{path} holds no exchange (record some with `edge-sim record`)")]
    Empty { path: PathBuf },
    #[error("a recording holds at most {MAX_EXCHANGES} exchanges")]
    Full,
}

impl RecordingError {
    pub fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| RecordingError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn invalid(path: &Path, message: impl std::fmt::Display) -> Self {
        RecordingError::Invalid {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }
}

/// The file of the `number`-th exchange (from 1) of the recording in `dir`.
pub(crate) fn exchange_path(dir: &Path, number: usize) -> PathBuf {
    dir.join(EXCHANGES_DIR).join(format!("{number:06}.json"))
}

/// The exchanges of the recording in `dir`, in the order they were made.
pub(crate) fn read_exchanges(dir: &Path) -> Result<Vec<Exchange>, RecordingError> {
    let folder = dir.join(EXCHANGES_DIR);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map_err(RecordingError::io(&folder))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    if files.is_empty() {
        return Err(RecordingError::Empty { path: folder });
    }
    if files.len() > MAX_EXCHANGES {
        return Err(RecordingError::Full);
    }
    files.sort();
    files
        .iter()
        .map(|path| {
            let text = std::fs::read(path).map_err(RecordingError::io(path))?;
            serde_json::from_slice(&text).map_err(|e| RecordingError::invalid(path, e))
        })
        .collect()
}

/// The events and log entries of the recording in `dir` (none when it has no data file).
pub(crate) fn read_data(dir: &Path) -> Result<RecordedData, RecordingError> {
    let path = dir.join(DATA_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| RecordingError::invalid(&path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(RecordedData::default()),
        Err(e) => Err(RecordingError::io(&path)(e)),
    }
}
