//! The words of a ContainerAppWatch's status beside every kind's: its condition types
//! and reasons.

use crate::api::models::apps::AppStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantNames)]
pub(crate) enum AppCondition {
    /// The application is active.
    AppReady,
    /// The rate-limit rules are mirrored.
    RateLimitsSynced,
    /// The security events of the window are summarised.
    SecurityEvents,
    /// The CDN logs of the window are summarised.
    CdnLogsSynced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AppReason {
    Polled,
    PolledLate,
    Synced,
    Quiet,
    Elevated,
    NoPullZone,
    Partial,
    AppActive,
    AppNotReady,
    SecurityEventsElevated,
    /// An application's status, in the platform's own words (`Active`, `Failing`...).
    App(&'static str),
}

impl AppReason {
    pub(crate) fn of_app(status: &AppStatus) -> Self {
        AppReason::App(status.reason())
    }
}

impl From<AppReason> for &'static str {
    fn from(reason: AppReason) -> Self {
        match reason {
            AppReason::Polled => "Polled",
            AppReason::PolledLate => "PolledLate",
            AppReason::Synced => "Synced",
            AppReason::Quiet => "Quiet",
            AppReason::Elevated => "Elevated",
            AppReason::NoPullZone => "NoPullZone",
            AppReason::Partial => "Partial",
            AppReason::AppActive => "AppActive",
            AppReason::AppNotReady => "AppNotReady",
            AppReason::SecurityEventsElevated => "SecurityEventsElevated",
            AppReason::App(status) => status,
        }
    }
}

/// Reasons of a watch that wait for a person: no Pull Zone to summarise, and the
/// application states a person ends (a crash loop, a stop, a suspension).
const TERMINAL: [AppReason; 4] = [
    AppReason::NoPullZone,
    AppReason::App("Failing"),
    AppReason::App("Inactive"),
    AppReason::App("Suspended"),
];

impl AppReason {
    /// Whether a reason, as a condition carries it, waits for a person.
    pub(crate) fn is_terminal_name(name: &str) -> bool {
        TERMINAL.iter().any(|reason| <&str>::from(*reason) == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_states_a_person_ends_are_terminal() {
        for status in [AppStatus::Failing, AppStatus::Inactive, AppStatus::Suspended] {
            assert!(
                AppReason::is_terminal_name(AppReason::of_app(&status).into()),
                "{status}"
            );
        }
        for status in [AppStatus::Active, AppStatus::Progressing, AppStatus::Unknown] {
            assert!(
                !AppReason::is_terminal_name(AppReason::of_app(&status).into()),
                "{status}"
            );
        }
        assert!(AppReason::is_terminal_name("NoPullZone"));
        assert!(!AppReason::is_terminal_name("Drifted"));
    }
}
