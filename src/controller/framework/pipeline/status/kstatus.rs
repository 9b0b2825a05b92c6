//! The status contract of every kind, in the conventions GitOps tools read (Flux's
//! kstatus, `kubectl wait`, Argo CD). The driver applies it to every status it writes:
//!
//! - `status.observedGeneration` is the object's generation;
//! - `Ready` is present and speaks of the current generation: a `Ready` left by an
//!   older generation turns False with reason `Progressing` until the kind decides it
//!   again;
//! - while `Ready` is not True, `Stalled=True` when its reason waits for a person
//!   ([`crate::controller::framework::reasons::AnyReason::is_terminal`]),
//!   else `Reconciling=True`; each carries Ready's reason and message, and is absent
//!   otherwise.
//!
//! kstatus then reads Current exactly when Ready is True for the current generation,
//! Failed when Stalled, InProgress otherwise.

use crate::controller::framework::pipeline::status::conditions::{NewCondition, find, merge};
use crate::controller::framework::reasons::{AnyReason, ConditionType, KindReason};
use crate::resources::{Condition, ConditionStatus};

/// `conditions` under the contract, for an object of `generation` at `now`, of a kind
/// whose own reasons are `R` (`own_is_terminal` says which of them wait for a person).
pub(crate) fn settle<R: KindReason>(
    conditions: &[Condition],
    generation: Option<i64>,
    now: &str,
    own_is_terminal: fn(R) -> bool,
) -> Vec<Condition> {
    let current = find(conditions, ConditionType::Ready).is_some_and(|r| r.observed_generation == generation);
    let mut settled = if current {
        conditions.to_vec()
    } else {
        let pending = NewCondition::<R>::progressing(pending_message(conditions, generation));
        merge(conditions, &[pending], generation, now)
    };
    let Some(ready) = find(&settled, ConditionType::Ready).cloned() else {
        return settled;
    };
    let derived = match ready.status {
        ConditionStatus::True => None,
        _ if AnyReason::<R>::parse(&ready.reason).is_some_and(|reason| reason.is_terminal(own_is_terminal)) => {
            Some(ConditionType::Stalled)
        }
        _ => Some(ConditionType::Reconciling),
    };
    // A derived condition that was already True keeps its transition time.
    let since = derived
        .and_then(|type_| find(&settled, type_))
        .filter(|c| c.status == ConditionStatus::True)
        .map_or_else(|| now.to_string(), |c| c.last_transition_time.clone());
    let abnormal: [&str; 2] = [ConditionType::Reconciling.into(), ConditionType::Stalled.into()];
    settled.retain(|c| !abnormal.contains(&c.type_.as_str()));
    if let Some(type_) = derived {
        settled.push(Condition {
            type_: <&str>::from(type_).to_string(),
            status: ConditionStatus::True,
            last_transition_time: since,
            observed_generation: generation,
            ..ready
        });
        settled.sort_by(|a, b| a.type_.cmp(&b.type_));
    }
    settled
}

/// "generation 2 is not applied yet", with the failure that holds it up, if any.
fn pending_message(conditions: &[Condition], generation: Option<i64>) -> String {
    let pending = match generation {
        Some(generation) => format!("generation {generation} is not applied yet"),
        None => "the spec is not applied yet".to_string(),
    };
    match find(conditions, ConditionType::Synced).filter(|s| s.status != ConditionStatus::True) {
        Some(synced) => format!("{pending}: {}", synced.message),
        None => pending,
    }
}

/// Ready alone, decided `ready` for `reason` and `generation` (for tests).
#[cfg(test)]
pub(crate) fn decided_ready(
    ready: bool,
    reason: impl Into<AnyReason<crate::controller::framework::reasons::NoOwnReason>>,
    generation: i64,
) -> Vec<Condition> {
    use crate::controller::framework::reasons::NoOwnReason;
    let decided = [NewCondition::<NoOwnReason>::new(
        ConditionType::Ready,
        ready,
        reason,
        "why",
    )];
    merge(&[], &decided, Some(generation), "t0")
}

/// `conditions` with Ready decided `ready` for `reason` at `at` (generation 1), then
/// settled: what the driver writes for a kind without reasons of its own.
#[cfg(test)]
pub(crate) fn settled_with_ready(
    conditions: &[Condition],
    ready: bool,
    reason: impl Into<AnyReason<crate::controller::framework::reasons::NoOwnReason>>,
    at: &str,
) -> Vec<Condition> {
    use crate::controller::framework::reasons::{NoOwnReason, no_own_is_terminal};
    let decided = [NewCondition::<NoOwnReason>::new(
        ConditionType::Ready,
        ready,
        reason,
        "",
    )];
    settle::<NoOwnReason>(
        &merge(conditions, &decided, Some(1), at),
        Some(1),
        at,
        no_own_is_terminal,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiFailure;
    use crate::controller::framework::reasons::{NoOwnReason, Reason, no_own_is_terminal};

    fn settle(conditions: &[Condition], generation: Option<i64>, now: &str) -> Vec<Condition> {
        super::settle::<NoOwnReason>(conditions, generation, now, no_own_is_terminal)
    }

    fn types(conditions: &[Condition]) -> Vec<(&str, ConditionStatus, &str)> {
        conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status, c.reason.as_str()))
            .collect()
    }

    #[test]
    fn ready_for_the_current_generation_has_no_abnormal_condition() {
        let settled = settle(&decided_ready(true, Reason::Reconciled, 3), Some(3), "t1");
        assert_eq!(types(&settled), [("Ready", ConditionStatus::True, "Reconciled")]);
    }

    #[test]
    fn a_ready_of_an_older_generation_turns_false_and_reconciling() {
        let mut conditions = decided_ready(true, Reason::Reconciled, 1);
        conditions = merge(
            &conditions,
            &[NewCondition::<NoOwnReason>::new(
                ConditionType::Synced,
                false,
                ApiFailure::ServerError,
                "503",
            )],
            Some(2),
            "t1",
        );
        let settled = settle(&conditions, Some(2), "t2");
        assert_eq!(
            types(&settled),
            [
                ("Ready", ConditionStatus::False, "Progressing"),
                ("Reconciling", ConditionStatus::True, "Progressing"),
                ("Synced", ConditionStatus::False, "ServerError"),
            ]
        );
        let ready = find(&settled, ConditionType::Ready).expect("Ready");
        assert_eq!(ready.message, "generation 2 is not applied yet: 503");
        assert_eq!(ready.observed_generation, Some(2));
    }

    #[test]
    fn no_ready_at_all_is_progressing() {
        let settled = settle(&[], Some(1), "t");
        assert_eq!(
            types(&settled),
            [
                ("Ready", ConditionStatus::False, "Progressing"),
                ("Reconciling", ConditionStatus::True, "Progressing"),
            ]
        );
    }

    #[test]
    fn a_terminal_reason_stalls_and_recovery_removes_it() {
        let stalled = settle(&decided_ready(false, Reason::CredentialsUnavailable, 1), Some(1), "t1");
        assert_eq!(
            types(&stalled),
            [
                ("Ready", ConditionStatus::False, "CredentialsUnavailable"),
                ("Stalled", ConditionStatus::True, "CredentialsUnavailable"),
            ]
        );
        let again = settle(&stalled, Some(1), "t2");
        assert_eq!(again, stalled, "a settled status is a fixed point: no write");
        let recovered = settled_with_ready(&stalled, true, Reason::Reconciled, "t3");
        assert_eq!(types(&recovered), [("Ready", ConditionStatus::True, "Reconciled")]);
    }

    #[test]
    fn a_transient_reason_reconciles_and_keeps_its_transition_time() {
        let first = settle(&decided_ready(false, ApiFailure::ServerError, 1), Some(1), "t1");
        let later = settle(
            &merge(
                &first,
                &[NewCondition::<NoOwnReason>::new(
                    ConditionType::Ready,
                    false,
                    ApiFailure::RateLimited,
                    "429",
                )],
                Some(1),
                "t2",
            ),
            Some(1),
            "t2",
        );
        let reconciling = find(&later, ConditionType::Reconciling).expect("Reconciling");
        assert_eq!(
            (reconciling.reason.as_str(), reconciling.last_transition_time.as_str()),
            ("RateLimited", "t1")
        );
        assert!(find(&later, ConditionType::Stalled).is_none());
    }

    #[test]
    fn switching_between_stalled_and_reconciling_keeps_one() {
        let stalled = settle(&decided_ready(false, ApiFailure::Unauthorized, 1), Some(1), "t1");
        let reconciling = settle(
            &merge(
                &stalled,
                &[NewCondition::<NoOwnReason>::new(
                    ConditionType::Ready,
                    false,
                    ApiFailure::Timeout,
                    "",
                )],
                Some(1),
                "t2",
            ),
            Some(1),
            "t2",
        );
        assert_eq!(
            types(&reconciling),
            [
                ("Ready", ConditionStatus::False, "Timeout"),
                ("Reconciling", ConditionStatus::True, "Timeout"),
            ]
        );
    }
}
