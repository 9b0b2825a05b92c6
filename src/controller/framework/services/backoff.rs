//! Per-object counts of consecutive failures; `ReconcileError::delay` turns a count into
//! the wait before the next attempt.

use std::collections::HashMap;
use std::sync::Mutex;

/// Consecutive failures per object, for the error backoff.
#[derive(Default)]
pub(crate) struct FailureCounts {
    counts: Mutex<HashMap<String, u32>>,
}

impl FailureCounts {
    /// Counts one more failure of `key` and returns how many in a row it has had.
    pub(crate) fn failed(&self, key: String) -> u32 {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(key).or_default();
        *count = count.saturating_add(1);
        *count
    }

    /// Keeps the failures of the objects `present` admits (their keys).
    pub(crate) fn retain(&self, present: impl Fn(&str) -> bool) {
        self.counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|key, _| present(key));
    }

    /// Forgets an object's failures (after a success, or once it is gone).
    pub(crate) fn forget(&self, key: &str) {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn failures_back_off_exponentially_and_are_forgotten() {
        let failures = FailureCounts::default();
        assert_eq!(failures.failed("a".into()), 1);
        assert_eq!(failures.failed("a".into()), 2);
        failures.forget("a");
        assert_eq!(failures.failed("a".into()), 1);
        let failure_delay =
            crate::controller::framework::reasons::error::ReconcileError::<std::convert::Infallible>::delay;
        assert_eq!(failure_delay(1, true, 1.0), Duration::from_secs(5));
        assert_eq!(failure_delay(3, true, 1.0), Duration::from_secs(20));
        assert_eq!(failure_delay(1, false, 0.0), Duration::from_secs(15));
        assert_eq!(failure_delay(30, false, 1.0), Duration::from_secs(300));
    }
}
