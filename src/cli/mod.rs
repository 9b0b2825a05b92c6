//! The library side of `edgectl`: parsing command-line values, the commands that do
//! more than one call, and rendering of every answer. The binary only parses its
//! arguments and dispatches here.

pub(crate) mod access_lists;
pub mod args;
pub(crate) mod certificates;
pub mod commands;
pub(crate) mod doctor;
pub(crate) mod logs;
pub(crate) mod parse;
pub(crate) mod plan;
pub(crate) mod render;
pub(crate) mod rollout;

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::api::ApiError;

/// Why a command failed; each exits 1.
#[derive(Debug)]
pub enum CommandError {
    /// Bad input, found before any call where possible.
    Usage(String),
    /// A platform call failed.
    Api(ApiError),
    /// The platform's state does not allow the command (no such list...).
    Refused(String),
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Usage(message) | CommandError::Refused(message) => f.write_str(message),
            CommandError::Api(error) => write!(f, "{error}"),
        }
    }
}

impl From<ApiError> for CommandError {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::InvalidInput(message) => CommandError::Usage(message),
            other => CommandError::Api(other),
        }
    }
}

impl CommandError {
    pub fn usage(message: impl Into<String>) -> Self {
        CommandError::Usage(message.into())
    }
}

/// Prints an answer on standard output: the table `render` makes of it, pretty JSON,
/// or a YAML document.
pub fn show<T: serde::Serialize>(output: args::Output, answer: &T, render: impl FnOnce(&T) -> String) {
    let encoded = match output {
        args::Output::Table => Ok(render(answer)),
        args::Output::Json => serde_json::to_string_pretty(answer)
            .map(|text| text + "\n")
            .map_err(|e| e.to_string()),
        args::Output::Yaml => serde_yaml::to_string(answer)
            .map(|text| format!("---\n{text}"))
            .map_err(|e| e.to_string()),
    };
    match encoded {
        Ok(text) => print!("{text}"),
        Err(error) => eprintln!("edgectl: cannot encode the answer: {error}"),
    }
}

/// The time `--since` (`duration`) before `now`; a usage error when that is before
/// any time the calendar holds.
pub fn since(now: DateTime<Utc>, duration: Duration) -> Result<DateTime<Utc>, CommandError> {
    chrono::Duration::from_std(duration)
        .ok()
        .and_then(|duration| now.checked_sub_signed(duration))
        .ok_or_else(|| CommandError::usage("--since is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_counts_back_from_now_and_refuses_what_no_calendar_holds() {
        let now = Utc::now();
        let hour = Duration::from_secs(3600);
        assert_eq!(since(now, hour).ok(), Some(now - chrono::Duration::hours(1)));
        let ages = Duration::from_secs(300_000 * 365 * 24 * 3600);
        assert!(matches!(since(now, ages), Err(CommandError::Usage(m)) if m == "--since is too long"));
        assert!(matches!(since(now, Duration::MAX), Err(CommandError::Usage(_))));
    }
}
