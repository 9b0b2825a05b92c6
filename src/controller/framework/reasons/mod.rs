//! The words of a status: condition types and reasons, as plain enums whose variant
//! names are what is written. The framework has those every kind shares
//! (`ConditionType`, [`Reason`]); each kind has its own enums beside them. The
//! failures of a reconcile (`error`) are written with them.

pub(crate) mod error;

use crate::api::ApiFailure;
use crate::resources::Condition;

/// The condition types of every kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString, strum::VariantNames)]
pub(crate) enum ConditionType {
    /// The object's goal is reached for its current generation.
    Ready,
    /// Present (True) only while work for the current generation is pending.
    Reconciling,
    /// Present (True) only while waiting cannot help: a person must act.
    Stalled,
    /// The last reconcile reached the platform and did what it had to.
    Synced,
}

/// The reasons any kind can have beside a platform call's failures ([`ApiFailure`]):
/// progress, pause, and the failures of credentials and Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
pub enum Reason {
    /// A new generation is not applied yet.
    Progressing,
    Paused,
    Resumed,
    Reconciled,
    KubernetesError,
    CredentialsUnavailable,
    /// The operator failed to encode one of its own requests.
    EncodingError,
    NotLeader,
}

/// A kind's own reasons: one enum whose variants are the words written
/// (`strum::IntoStaticStr`), read back (`strum::EnumString`) and listed
/// (`strum::VariantNames`: `Kind::reasons`, which the docs are checked against). The
/// shared words, [`ApiFailure`] and [`Reason`], derive no `VariantNames`: that tells a
/// kind's reasons from them. Which of them wait for a person, the kind says
/// (`Reconcilable::is_terminal`).
pub trait KindReason:
    Copy + PartialEq + std::fmt::Debug + Into<&'static str> + std::str::FromStr + strum::VariantNames
{
}

impl<R> KindReason for R where
    R: Copy + PartialEq + std::fmt::Debug + Into<&'static str> + std::str::FromStr + strum::VariantNames
{
}

/// A reason of an object of a kind whose own reasons are `R`: a platform call's
/// failure, a reason every kind has, or one of the kind's. Conditions, Events and
/// metrics carry it until it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnyReason<R> {
    Platform(ApiFailure),
    Common(Reason),
    Own(R),
}

impl<R: KindReason> AnyReason<R> {
    /// The word written in status, Events and metric labels.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AnyReason::Platform(failure) => failure.into(),
            AnyReason::Common(reason) => reason.into(),
            AnyReason::Own(reason) => reason.into(),
        }
    }

    /// A written reason read back: the one place a reason's text is parsed. `None`
    /// for any other text (anyone granted the status subresource may write one).
    pub(crate) fn parse(name: &str) -> Option<Self> {
        (name.parse::<ApiFailure>().ok().map(AnyReason::from))
            .or_else(|| name.parse().ok().map(AnyReason::Common))
            .or_else(|| name.parse().ok().map(AnyReason::Own))
    }

    /// Whether every kind has it (progress, pause, credentials, Kubernetes), rather
    /// than a platform call or the kind itself.
    pub(crate) fn is_common(self) -> bool {
        matches!(self, AnyReason::Common(_))
    }

    /// Whether the object's credentials are the problem: the platform refused its key,
    /// or it has none it may use.
    pub(crate) fn is_credentials_problem(self) -> bool {
        match self {
            AnyReason::Platform(failure) => failure.is_refused_key(),
            AnyReason::Common(reason) => reason == Reason::CredentialsUnavailable,
            AnyReason::Own(_) => false,
        }
    }

    /// Whether an object not Ready for this reason waits for a person: a spec, a
    /// Secret, a key or the platform's configuration must change first. Everything
    /// else (a platform that is busy or down, a quota, a new generation) resolves by
    /// waiting. The one map behind `Stalled`, the error backoff and the Ready of a
    /// failed reconcile; `own_is_terminal` answers for the kind's own reasons.
    pub(crate) fn is_terminal(self, own_is_terminal: fn(R) -> bool) -> bool {
        match self {
            AnyReason::Platform(failure) => !failure.is_retryable(),
            AnyReason::Common(reason) => matches!(reason, Reason::Paused | Reason::CredentialsUnavailable),
            AnyReason::Own(reason) => own_is_terminal(reason),
        }
    }
}

impl<R: KindReason> std::fmt::Display for AnyReason<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A write the client withheld is `NotLeader`: this process may no longer act.
impl<R> From<ApiFailure> for AnyReason<R> {
    fn from(failure: ApiFailure) -> Self {
        match failure {
            ApiFailure::WriteWithheld => AnyReason::Common(Reason::NotLeader),
            failure => AnyReason::Platform(failure),
        }
    }
}

impl<R> From<Reason> for AnyReason<R> {
    fn from(reason: Reason) -> Self {
        AnyReason::Common(reason)
    }
}

impl<R: KindReason> From<R> for AnyReason<R> {
    fn from(reason: R) -> Self {
        AnyReason::Own(reason)
    }
}

/// A condition's type and reason as the vocabulary names them: a type of
/// [`ConditionType`] or of the kind's `own_types`, a reason of [`AnyReason`]. `None`
/// for any other text: only these words become metric labels.
pub(crate) fn vocabulary_words<R: KindReason>(
    condition: &Condition,
    own_types: &[&'static str],
) -> Option<(&'static str, AnyReason<R>)> {
    let type_ = (condition.type_.parse::<ConditionType>().ok().map(<&'static str>::from))
        .or_else(|| own_types.iter().copied().find(|own| *own == condition.type_))?;
    Some((type_, AnyReason::parse(&condition.reason)?))
}

/// The reasons of a kind with none of its own, for the framework's tests.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantNames)]
pub(crate) enum NoOwnReason {}

/// Which of [`NoOwnReason`] wait for a person: there are none.
#[cfg(test)]
pub(crate) fn no_own_is_terminal(never: NoOwnReason) -> bool {
    match never {}
}

#[cfg(test)]
impl std::str::FromStr for NoOwnReason {
    type Err = ();

    fn from_str(_: &str) -> Result<Self, ()> {
        Err(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Common = AnyReason<NoOwnReason>;

    #[test]
    fn reasons_that_wait_for_a_person_are_terminal() {
        assert!(Common::from(ApiFailure::Unauthorized).is_terminal(no_own_is_terminal));
        assert!(Common::from(Reason::CredentialsUnavailable).is_terminal(no_own_is_terminal));
        assert!(!Common::from(ApiFailure::ServerError).is_terminal(no_own_is_terminal));
        assert!(!Common::from(Reason::Progressing).is_terminal(no_own_is_terminal));
    }

    #[test]
    fn a_written_reason_reads_back_as_itself_and_nothing_else_reads() {
        for reason in [
            Common::from(ApiFailure::RateLimited),
            Common::from(ApiFailure::Timeout),
            Common::from(Reason::Paused),
        ] {
            assert_eq!(Common::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(Common::parse("Drifted"), None, "another kind's reason");
        assert_eq!(Common::parse(""), None);
    }

    #[test]
    fn a_withheld_write_is_not_leader() {
        assert_eq!(Common::from(ApiFailure::WriteWithheld), Common::from(Reason::NotLeader));
    }
}
