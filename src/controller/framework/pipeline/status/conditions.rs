//! Conditions kept in the Kubernetes convention: one per type; an unchanged status
//! keeps its lastTransitionTime.

use strum::VariantNames;

use crate::controller::framework::reasons::{AnyReason, ConditionType, KindReason, Reason};
use crate::resources::{Condition, ConditionStatus};

/// A condition as a reconciler decides it, before timestamps, for a kind whose own
/// reasons are `R`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewCondition<R> {
    pub type_: &'static str,
    pub status: ConditionStatus,
    pub reason: AnyReason<R>,
    pub message: String,
}

/// A condition an object shows, read back: its status, its reason when the reason is a
/// word of the kind's vocabulary (anyone granted the status subresource may write
/// another), the generation it was decided for, and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown<R> {
    pub status: bool,
    pub reason: Option<AnyReason<R>>,
    pub observed_generation: Option<i64>,
    pub message: String,
}

impl<R: KindReason> Shown<R> {
    fn of(condition: &Condition) -> Self {
        Self {
            status: condition.status == ConditionStatus::True,
            reason: AnyReason::parse(&condition.reason),
            observed_generation: condition.observed_generation,
            message: condition.message.clone(),
        }
    }

    /// Whether it is True for `generation`.
    pub(crate) fn is_true_for(&self, generation: Option<i64>) -> bool {
        self.status && self.observed_generation == generation
    }

    /// Whether its reason is `reason`.
    pub(crate) fn is(&self, reason: impl Into<AnyReason<R>>) -> bool {
        self.reason == Some(reason.into())
    }
}

/// The longest condition message: the platform's words (at most
/// [`crate::api::MAX_PLATFORM_TEXT`]) with the operator's around them, or a summary
/// naming what the Internet sent (user agents, URLs).
pub(crate) const MAX_CONDITION_MESSAGE_BYTES: usize = 2048;

/// The longest reason a cached condition keeps; every reason of the vocabularies is
/// far shorter.
const MAX_OWN_REASON_BYTES: usize = 128;

/// What a cache keeps of an object's conditions: the first of each type the operator
/// writes (`ConditionType`'s and `own_types`), unless its reason is longer than any the
/// operator writes. Whatever else a status writer put there is dropped, so a cached
/// status never holds more conditions than the operator writes itself; on what the
/// operator wrote, it changes nothing.
pub(crate) fn own_conditions(conditions: &[Condition], own_types: &[&str]) -> Vec<Condition> {
    let mut seen: Vec<&str> = Vec::new();
    let mut kept = Vec::new();
    for condition in conditions {
        let type_ = ConditionType::VARIANTS
            .iter()
            .chain(own_types)
            .find(|type_| **type_ == condition.type_);
        let Some(type_) = type_ else { continue };
        if seen.contains(type_) || condition.reason.len() > MAX_OWN_REASON_BYTES {
            continue;
        }
        seen.push(type_);
        kept.push(condition.clone());
    }
    kept.shrink_to_fit();
    kept
}

impl<R: KindReason> NewCondition<R> {
    pub(crate) fn new(
        type_: impl Into<&'static str>,
        status: bool,
        reason: impl Into<AnyReason<R>>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_: type_.into(),
            status: if status {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            reason: reason.into(),
            message: crate::api::bounded_text(&message.into(), MAX_CONDITION_MESSAGE_BYTES),
        }
    }
}

/// Merges decided conditions into `current`: a condition whose status did not change
/// keeps its lastTransitionTime; others get `now`. Types not decided are kept; of two
/// decided of one type, the later is merged.
pub(crate) fn merge<R: KindReason>(
    current: &[Condition],
    decided: &[NewCondition<R>],
    generation: Option<i64>,
    now: &str,
) -> Vec<Condition> {
    let mut merged: Vec<Condition> = current
        .iter()
        .filter(|c| !decided.iter().any(|d| d.type_ == c.type_))
        .cloned()
        .collect();
    for (at, d) in decided.iter().enumerate() {
        if decided[at + 1..].iter().any(|later| later.type_ == d.type_) {
            continue;
        }
        let previous = current.iter().find(|c| c.type_ == d.type_);
        let last_transition_time = match previous {
            Some(p) if p.status == d.status => p.last_transition_time.clone(),
            _ => now.to_string(),
        };
        merged.push(Condition {
            type_: d.type_.to_string(),
            status: d.status,
            reason: d.reason.as_str().to_string(),
            message: d.message.clone(),
            last_transition_time,
            observed_generation: generation,
        });
    }
    merged.sort_by(|a, b| a.type_.cmp(&b.type_));
    merged
}

impl<R: KindReason> NewCondition<R> {
    /// Ready, decided.
    pub(crate) fn ready(status: bool, reason: impl Into<AnyReason<R>>, message: impl Into<String>) -> Self {
        Self::new(ConditionType::Ready, status, reason, message)
    }

    /// Ready=False, `Progressing`: the generation is not applied yet.
    pub(crate) fn progressing(message: impl Into<String>) -> Self {
        Self::ready(false, Reason::Progressing, message)
    }

    /// Synced, decided.
    pub(crate) fn synced(status: bool, reason: impl Into<AnyReason<R>>, message: impl Into<String>) -> Self {
        Self::new(ConditionType::Synced, status, reason, message)
    }

    /// Whether this is of type `type_`.
    pub(crate) fn is(&self, type_: impl Into<&'static str>) -> bool {
        self.type_ == type_.into()
    }

    /// Whether this is Ready=True.
    pub(crate) fn is_ready(&self) -> bool {
        self.is(ConditionType::Ready) && self.status == ConditionStatus::True
    }

    /// Whether this is a Synced.
    pub(crate) fn is_synced(&self) -> bool {
        self.is(ConditionType::Synced)
    }

    /// The length of `current` with `decided` merged in, serialized: the room a
    /// status's conditions take once the driver writes them.
    pub(crate) fn merged_len(current: &[Condition], decided: &[Self], generation: Option<i64>) -> usize {
        const A_TIME: &str = "2026-01-01T00:00:00Z";
        crate::resources::serialized_len(&merge(current, decided, generation, A_TIME))
    }

    /// The Ready `conditions` show, read in the words of this kind.
    pub(crate) fn ready_in(conditions: &[Condition]) -> Option<Shown<R>> {
        find(conditions, ConditionType::Ready).map(Shown::of)
    }

    /// The Synced `conditions` show, read in the words of this kind.
    pub(crate) fn synced_in(conditions: &[Condition]) -> Option<Shown<R>> {
        find(conditions, ConditionType::Synced).map(Shown::of)
    }

    /// The condition of `type_` (one of the kind's own) `conditions` show, read in the
    /// words of this kind.
    pub(crate) fn of_type_in(conditions: &[Condition], type_: impl Into<&'static str>) -> Option<Shown<R>> {
        find(conditions, type_).map(Shown::of)
    }

    /// Whether `conditions` already show this one, decided for `generation` (its
    /// status, reason, message and generation).
    pub(crate) fn is_shown_in(&self, conditions: &[Condition], generation: Option<i64>) -> bool {
        find(conditions, self.type_).is_some_and(|shown| {
            shown.status == self.status
                && shown.reason == self.reason.as_str()
                && shown.message == self.message
                && shown.observed_generation == generation
        })
    }
}

/// The condition of a type, if present.
pub(crate) fn find(conditions: &[Condition], type_: impl Into<&'static str>) -> Option<&Condition> {
    let type_: &str = type_.into();
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether a condition of `type_` is True.
#[cfg(test)]
pub(crate) fn is_true(conditions: &[Condition], type_: impl Into<&'static str>) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiFailure;
    use crate::controller::framework::reasons::{NoOwnReason, Reason};

    #[test]
    fn unchanged_status_keeps_its_transition_time() {
        let ready = |status, reason: AnyReason<NoOwnReason>, message: &str| {
            NewCondition::new(ConditionType::Ready, status, reason, message)
        };
        let first = merge(&[], &[ready(true, Reason::Reconciled.into(), "ok")], Some(1), "t1");
        let same = merge(
            &first,
            &[ready(true, Reason::Reconciled.into(), "still ok")],
            Some(2),
            "t2",
        );
        assert_eq!(same[0].last_transition_time, "t1");
        assert_eq!(same[0].message, "still ok");
        assert_eq!(same[0].observed_generation, Some(2));
        let flipped = merge(
            &same,
            &[ready(false, ApiFailure::Unauthorized.into(), "x")],
            Some(2),
            "t3",
        );
        assert_eq!(flipped[0].last_transition_time, "t3");
        assert!(!is_true(&flipped, ConditionType::Ready));
        assert_eq!(flipped[0].reason, "Unauthorized");
    }

    #[test]
    fn a_cache_keeps_the_conditions_the_operator_writes_and_nothing_a_status_writer_adds() {
        let written = merge(
            &[],
            &[
                NewCondition::<NoOwnReason>::new(ConditionType::Ready, true, Reason::Reconciled, "ok"),
                NewCondition::<NoOwnReason>::new(ConditionType::Synced, true, Reason::Reconciled, "m".repeat(2048)),
                NewCondition::<NoOwnReason>::new(ConditionType::Stalled, false, Reason::Reconciled, ""),
            ],
            Some(3),
            "2026-11-28T00:00:00Z",
        );
        assert_eq!(
            own_conditions(&written, &["AppReady"]),
            written,
            "what the operator wrote is kept as it is"
        );

        let forged = |type_: &str, reason: &str| Condition {
            type_: type_.to_string(),
            status: ConditionStatus::True,
            reason: reason.to_string(),
            message: "x".repeat(2048),
            last_transition_time: "2026-11-28T00:00:00Z".to_string(),
            observed_generation: None,
        };
        let mut flooded = written.clone();
        flooded.extend((0..13).map(|i| forged(&format!("Tenant{i}"), "Mine")));
        flooded.push(forged("Ready", "Second"));
        flooded.push(forged("AppReady", &"R".repeat(MAX_OWN_REASON_BYTES + 1)));
        flooded.push(forged("AppReady", "Own"));
        let flooded = own_conditions(&flooded, &["AppReady"]);
        let types: Vec<&str> = flooded.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Stalled", "Synced", "AppReady"]);
        assert_eq!(flooded[0], written[0], "the first of a type wins");
        assert_eq!(flooded[3].reason, "Own", "an over-long reason is not the operator's");
        assert_eq!(flooded.capacity(), 4, "nothing more is held");
    }

    #[test]
    fn conditions_are_keyed_by_type_and_others_are_kept() {
        let both = merge(
            &[],
            &[
                NewCondition::<NoOwnReason>::new(ConditionType::Synced, true, Reason::Resumed, ""),
                NewCondition::<NoOwnReason>::new(ConditionType::Ready, true, Reason::Reconciled, ""),
            ],
            None,
            "t",
        );
        assert_eq!(
            both.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
            ["Ready", "Synced"]
        );
        let one = merge(
            &both,
            &[NewCondition::<NoOwnReason>::new(
                ConditionType::Ready,
                false,
                ApiFailure::Unauthorized,
                "",
            )],
            None,
            "t2",
        );
        assert_eq!(one.len(), 2);
        assert!(is_true(&one, ConditionType::Synced));
    }

    #[test]
    fn of_two_decided_conditions_of_one_type_the_later_is_merged() {
        let ready = |status, reason: Reason| NewCondition::<NoOwnReason>::new(ConditionType::Ready, status, reason, "");
        let merged = merge(
            &[],
            &[ready(true, Reason::Reconciled), ready(false, Reason::Progressing)],
            None,
            "t",
        );
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].reason, "Progressing");
        assert!(ready(false, Reason::Progressing).is_shown_in(&merged, None));
        assert!(!ready(true, Reason::Progressing).is_shown_in(&merged, None));
        assert!(!ready(false, Reason::Progressing).is_shown_in(&merged, Some(2)));
    }
}
