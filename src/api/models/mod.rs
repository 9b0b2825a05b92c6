//! Wire models of the Edge Platform API, shared by the client and the emulator so
//! both sides speak exactly one definition of every body.

pub mod apps;
mod lenient;
pub mod logging;
pub(crate) mod pullzone;
pub mod shield;

use serde::{Deserialize, Serialize};

/// `GenericRequestResponse`: status information carried as `error` / `errorResponse`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GenericRequestResponse {
    #[serde(default, deserialize_with = "lenient::null_as_default")]
    pub status_code: i32,
    #[serde(default, deserialize_with = "lenient::null_as_default")]
    pub success: bool,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub error_key: Option<String>,
}

impl GenericRequestResponse {
    pub fn ok() -> Self {
        Self {
            status_code: 200,
            success: true,
            message: None,
            error_key: None,
        }
    }
}

/// RFC 7807 `ProblemDetails`, the error body of the Shield-style endpoints.
/// Additional members (such as `errors`) are kept in `extensions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ProblemDetails {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub status: Option<i32>,
    #[serde(default)]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    #[serde(flatten)]
    pub extensions: serde_json::Map<String, serde_json::Value>,
}

/// `{ErrorKey, Field, Message}`: error body of the Pull Zone certificate endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct FieldError {
    pub error_key: Option<String>,
    pub field: Option<String>,
    pub message: Option<String>,
}

/// One item of `errors[]` in [`ValidationErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ValidationErrorItem {
    pub message: Option<String>,
    pub field: Option<String>,
}

/// `{title, status, detail, instance, errors[], id}`: an error body of the container API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ValidationErrorBody {
    pub title: Option<String>,
    pub status: Option<i32>,
    pub detail: Option<String>,
    pub instance: Option<String>,
    pub errors: Vec<ValidationErrorItem>,
    pub id: Option<String>,
}

/// `{"error": {"code", "message"}}`: error body of both logging API versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggingErrorBody {
    pub error: LoggingError,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggingError {
    pub code: String,
    #[serde(default)]
    pub message: String,
}
