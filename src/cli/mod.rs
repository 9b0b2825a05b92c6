//! The library side of `edgectl`: parsing command-line values, the commands that do
//! more than one call, and rendering of every answer. The binary only parses its
//! arguments and dispatches here.

pub mod access_lists;
pub mod args;
pub mod certificates;
pub mod commands;
pub mod logs;
pub mod parse;
pub mod plan;
pub mod render;

use crate::api::ApiError;

/// Why a command failed; each exits 1.
#[derive(Debug)]
pub enum Failure {
    /// Bad input, found before any call where possible.
    Usage(String),
    /// A platform call failed.
    Api(ApiError),
    /// The platform's state does not allow the command (no such list...).
    Refused(String),
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

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure::Usage(message.into())
    }
}

/// Prints `value` as pretty JSON on standard output.
pub fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(error) => eprintln!("edgectl: cannot encode the answer: {error}"),
    }
}
