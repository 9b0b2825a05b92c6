//! The library side of `edgectl`: parsing command-line values, the commands that do
//! more than one call, and rendering of every answer. The binary only parses its
//! arguments and dispatches here.

pub mod access_lists;
pub mod certificates;
pub mod logs;
pub mod parse;
pub mod plan;
pub mod render;

use crate::api::ApiError;

/// Why a command failed, and its exit status.
#[derive(Debug)]
pub enum Failure {
    /// Bad input: exit 2, before any call where possible.
    Usage(String),
    /// A platform call failed: exit 1.
    Api(ApiError),
    /// The platform's state does not allow the command (no such list...): exit 1.
    Refused(String),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Api(_) | Failure::Refused(_) => 1,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Usage(message) | Failure::Refused(message) => f.write_str(message),
            Failure::Api(error) => write!(f, "{error}"),
        }
    }
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::InvalidInput(message) => Failure::Usage(message),
            other => Failure::Api(other),
        }
    }
}
