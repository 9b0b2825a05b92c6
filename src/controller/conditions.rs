//! Conditions kept in the Kubernetes convention: one per type, and an unchanged
//! status keeps its lastTransitionTime.

use crate::crd::{Condition, ConditionStatus};

/// A condition as a reconciler decides it, before timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub type_: &'static str,
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
}

impl Decided {
    pub fn new(type_: &'static str, status: bool, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            type_,
            status: if status {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Merges decided conditions into `current`: a condition whose status did not change
/// keeps its lastTransitionTime; others get `now`. Types not decided are kept.
pub fn merge(current: &[Condition], decided: &[Decided], generation: Option<i64>, now: &str) -> Vec<Condition> {
    let mut merged: Vec<Condition> = current
        .iter()
        .filter(|c| !decided.iter().any(|d| d.type_ == c.type_))
        .cloned()
        .collect();
    for d in decided {
        let previous = current.iter().find(|c| c.type_ == d.type_);
        let last_transition_time = match previous {
            Some(p) if p.status == d.status => p.last_transition_time.clone(),
            _ => now.to_string(),
        };
        merged.push(Condition {
            type_: d.type_.to_string(),
            status: d.status,
            reason: d.reason.clone(),
            message: d.message.clone(),
            last_transition_time,
            observed_generation: generation,
        });
    }
    merged.sort_by(|a, b| a.type_.cmp(&b.type_));
    merged
}

/// `Synced=False Paused` when paused; when no longer paused, `Synced=True Resumed` in
/// place of a Paused condition. `None` when nothing changes.
pub fn pause_condition(paused: bool, current: &[Condition]) -> Option<Decided> {
    let was_paused = find(current, "Synced").is_some_and(|c| c.reason == "Paused");
    match (paused, was_paused) {
        (true, _) => Some(Decided::new(
            "Synced",
            false,
            "Paused",
            "edgeplatform.io/paused is true",
        )),
        (false, true) => Some(Decided::new("Synced", true, "Resumed", "")),
        (false, false) => None,
    }
}

/// The condition of a type, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether a condition of `type_` is True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_status_keeps_its_transition_time() {
        let first = merge(&[], &[Decided::new("Ready", true, "Synced", "ok")], Some(1), "t1");
        let same = merge(
            &first,
            &[Decided::new("Ready", true, "Synced", "still ok")],
            Some(2),
            "t2",
        );
        assert_eq!(same[0].last_transition_time, "t1");
        assert_eq!(same[0].message, "still ok");
        assert_eq!(same[0].observed_generation, Some(2));
        let flipped = merge(&same, &[Decided::new("Ready", false, "Failed", "x")], Some(2), "t3");
        assert_eq!(flipped[0].last_transition_time, "t3");
        assert!(!is_true(&flipped, "Ready"));
    }

    #[test]
    fn conditions_are_keyed_by_type_and_others_are_kept() {
        let both = merge(
            &[],
            &[
                Decided::new("Synced", true, "A", ""),
                Decided::new("Ready", true, "B", ""),
            ],
            None,
            "t",
        );
        assert_eq!(
            both.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
            ["Ready", "Synced"]
        );
        let one = merge(&both, &[Decided::new("Ready", false, "C", "")], None, "t2");
        assert_eq!(one.len(), 2);
        assert!(is_true(&one, "Synced"));
    }
}
