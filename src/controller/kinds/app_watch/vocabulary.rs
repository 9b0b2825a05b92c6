//! The words of a ContainerAppWatch's status beside every kind's: its condition types
//! and reasons.

use crate::api::models::apps::AppStatus;
use crate::controller::framework::status::vocabulary::{KindConditions, KindReasons, Word};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

impl Word for AppCondition {
    fn as_str(self) -> &'static str {
        match self {
            AppCondition::AppReady => "AppReady",
            AppCondition::RateLimitsSynced => "RateLimitsSynced",
            AppCondition::SecurityEvents => "SecurityEvents",
            AppCondition::CdnLogsSynced => "CdnLogsSynced",
        }
    }
}

impl KindConditions for AppCondition {}

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

impl Word for AppReason {
    fn as_str(self) -> &'static str {
        match self {
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

impl KindReasons for AppReason {
    const TERMINAL: &'static [Self] = &[
        AppReason::NoPullZone,
        // Application states a person ends: a crash loop, a stop, a suspension.
        AppReason::App("Failing"),
        AppReason::App("Inactive"),
        AppReason::App("Suspended"),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::framework::status::vocabulary::{AnyReason, Nothing};

    #[test]
    fn application_states_a_person_ends_are_terminal() {
        for status in [AppStatus::Failing, AppStatus::Inactive, AppStatus::Suspended] {
            assert!(
                AnyReason::<AppReason>::Kind(AppReason::of_app(&status)).is_terminal(),
                "{status}"
            );
        }
        for status in [AppStatus::Active, AppStatus::Progressing, AppStatus::Unknown] {
            assert!(
                !AnyReason::<AppReason>::Kind(AppReason::of_app(&status)).is_terminal(),
                "{status}"
            );
        }
        assert!(AnyReason::<AppReason>::is_terminal_name("Failing"));
        assert!(!AnyReason::<Nothing>::is_terminal_name("Failing"));
    }
}
