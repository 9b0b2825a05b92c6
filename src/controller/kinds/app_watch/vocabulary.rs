//! The words of a ContainerAppWatch's status beside every kind's: its condition types
//! and reasons.

use crate::api::models::apps::AppStatus;
use crate::controller::framework::status::vocabulary::KindReason;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
pub(crate) enum AppReason {
    Polled,
    PolledLate,
    /// A mirror or summary is refreshed for its window.
    #[strum(serialize = "Synced")]
    Refreshed,
    Quiet,
    Elevated,
    NoPullZone,
    Partial,
    AppActive,
    AppNotReady,
    SecurityEventsElevated,
    // An application's status, in the platform's own words.
    Unknown,
    Active,
    Progressing,
    Inactive,
    Failing,
    Suspended,
    /// A status the platform's documents do not list.
    UnrecognizedStatus,
}

impl AppReason {
    pub(crate) fn of_app(status: &AppStatus) -> Self {
        match status {
            AppStatus::Unknown => AppReason::Unknown,
            AppStatus::Active => AppReason::Active,
            AppStatus::Progressing => AppReason::Progressing,
            AppStatus::Inactive => AppReason::Inactive,
            AppStatus::Failing => AppReason::Failing,
            AppStatus::Suspended => AppReason::Suspended,
            AppStatus::Unrecognized(_) => AppReason::UnrecognizedStatus,
        }
    }
}

/// Reasons of a watch that wait for a person: no Pull Zone to summarise, and the
/// application states a person ends (a crash loop, a stop, a suspension).
impl KindReason for AppReason {
    fn is_terminal(self) -> bool {
        matches!(
            self,
            AppReason::NoPullZone | AppReason::Failing | AppReason::Inactive | AppReason::Suspended
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::controller::framework::status::vocabulary::AnyReason;

    fn is_terminal(written: &str) -> bool {
        AnyReason::<AppReason>::parse(written).is_some_and(AnyReason::is_terminal)
    }

    #[test]
    fn application_states_a_person_ends_are_terminal() {
        for status in [AppStatus::Failing, AppStatus::Inactive, AppStatus::Suspended] {
            assert!(is_terminal(AppReason::of_app(&status).into()), "{status}");
        }
        for status in [AppStatus::Active, AppStatus::Progressing, AppStatus::Unknown] {
            assert!(!is_terminal(AppReason::of_app(&status).into()), "{status}");
        }
        assert!(is_terminal("NoPullZone"));
        assert!(!is_terminal("Drifted"));
    }

    #[test]
    fn an_application_status_is_written_in_the_platform_s_words_capitalised() {
        let statuses = [
            AppStatus::Active,
            AppStatus::Failing,
            AppStatus::Unrecognized("Hibernating".into()),
        ];
        let written = statuses.map(|status| <&str>::from(AppReason::of_app(&status)));
        assert_eq!(written, ["Active", "Failing", "UnrecognizedStatus"]);
    }
}
