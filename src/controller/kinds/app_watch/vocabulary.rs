//! The words of a ContainerAppWatch's status beside every kind's: its condition types
//! and reasons.

use std::str::FromStr;

use strum::IntoEnumIterator;

use crate::api::models::apps::{AppState, AppStatus};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumIter, strum::VariantNames)]
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
    /// An application's status, in the platform's own words.
    #[strum(transparent)]
    App(AppState),
}

impl AppReason {
    pub(crate) fn of_app(status: &AppStatus) -> Self {
        AppReason::App(status.into())
    }
}

/// A written reason: an application's state, or one of the watch's own words.
impl FromStr for AppReason {
    type Err = strum::ParseError;

    fn from_str(word: &str) -> Result<Self, Self::Err> {
        if let Ok(state) = word.parse::<AppState>() {
            return Ok(AppReason::App(state));
        }
        AppReason::iter()
            .find(|reason| <&str>::from(reason) == word)
            .ok_or(strum::ParseError::VariantNotFound)
    }
}

impl AppReason {
    /// Whether an object not Ready for this reason waits for a person: no Pull Zone to
    /// summarise, and the application states a person ends (a crash loop, a stop, a
    /// suspension).
    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            AppReason::NoPullZone | AppReason::App(AppState::Failing | AppState::Inactive | AppState::Suspended)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::controller::framework::reasons::AnyReason;

    fn is_terminal(written: &str) -> bool {
        AnyReason::<AppReason>::parse(written).is_some_and(|reason| reason.is_terminal(AppReason::is_terminal))
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

    #[test]
    fn every_reason_reads_back_from_the_word_written() {
        let states = [
            AppStatus::Unknown,
            AppStatus::Active,
            AppStatus::Progressing,
            AppStatus::Inactive,
            AppStatus::Failing,
            AppStatus::Suspended,
            AppStatus::Unrecognized("Hibernating".into()),
        ]
        .map(|status| AppReason::of_app(&status));
        let words = states.map(<&str>::from);
        assert_eq!(
            words,
            [
                "Unknown",
                "Active",
                "Progressing",
                "Inactive",
                "Failing",
                "Suspended",
                "UnrecognizedStatus"
            ]
        );
        for reason in AppReason::iter().chain(states) {
            assert_eq!(<&str>::from(reason).parse::<AppReason>(), Ok(reason));
        }
        assert_eq!("Synced".parse::<AppReason>(), Ok(AppReason::Refreshed));
        assert!("Refreshed".parse::<AppReason>().is_err());
        assert!("Unrecognized".parse::<AppReason>().is_err());
    }
}
