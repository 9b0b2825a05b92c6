//! The backoff step of each hostname's certificate completions in this process: at most
//! one completion of a hostname per step, whichever object names it and however often
//! it is asked for. The time comes in, so the ledger is tested without a cluster.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};

/// When the next completion of a hostname may be made, for each hostname whose step has
/// not ended: at most one entry per hostname, none whose time has passed.
#[derive(Debug, Default)]
pub(crate) struct CompletionLedger {
    steps: Mutex<HashMap<String, DateTime<Utc>>>,
}

/// A hostname as the ledger knows it: lowercase ASCII, without a trailing dot.
fn hostname_key(hostname: &str) -> String {
    hostname.strip_suffix('.').unwrap_or(hostname).to_ascii_lowercase()
}

/// `now` plus `wait`, or the end of time when that overflows.
pub(crate) fn later(now: DateTime<Utc>, wait: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(wait)
        .ok()
        .and_then(|wait| now.checked_add_signed(wait))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

impl CompletionLedger {
    /// Takes the turn of `hostname` at `now`. `None`: its step has ended, and the ledger
    /// now holds the hostname for `hold` (the longest a call can take) until
    /// [`Self::record`] says when the new step ends. `Some`: the end of its step, before
    /// which no completion of it is made.
    pub(crate) fn take(&self, hostname: &str, now: DateTime<Utc>, hold: Duration) -> Option<DateTime<Utc>> {
        let mut steps = self.pruned(now);
        let key = hostname_key(hostname);
        if let Some(end) = steps.get(&key) {
            return Some(*end);
        }
        steps.insert(key, later(now, hold));
        None
    }

    /// Records the step that a completion of `hostname` made at `now` started: the next
    /// one not before `end`.
    pub(crate) fn record(&self, hostname: &str, end: DateTime<Utc>, now: DateTime<Utc>) {
        let mut steps = self.pruned(now);
        let key = hostname_key(hostname);
        if end > now {
            steps.insert(key, end);
        } else {
            steps.remove(&key);
        }
    }

    /// The steps, without those that ended by `now`.
    fn pruned(&self, now: DateTime<Utc>) -> MutexGuard<'_, HashMap<String, DateTime<Utc>>> {
        let mut steps = self.steps.lock().unwrap_or_else(PoisonError::into_inner);
        steps.retain(|_, end| *end > now);
        steps
    }

    /// How many hostnames the ledger holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.steps.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: Duration = Duration::from_secs(30);

    fn at(raw: &str) -> DateTime<Utc> {
        raw.parse().expect("valid time")
    }

    #[test]
    fn a_hostname_is_one_key_whatever_its_case_or_trailing_dot() {
        let ledger = CompletionLedger::default();
        let now = at("2026-11-20T12:00:00Z");
        assert_eq!(ledger.take("shop.example.com", now, STEP), None);
        assert_eq!(ledger.take("Shop.Example.COM.", now, STEP), Some(later(now, STEP)));
        assert_eq!(ledger.take("other.example.com", now, STEP), None);
        assert_eq!(ledger.len(), 2);
    }

    #[test]
    fn the_ledger_holds_no_step_that_has_ended() {
        let ledger = CompletionLedger::default();
        let now = at("2026-11-20T12:00:00Z");
        for i in 0..1_000 {
            let hostname = format!("host-{i}.example.com");
            assert_eq!(ledger.take(&hostname, now, Duration::from_secs(120)), None);
            ledger.record(&hostname, later(now, STEP), now);
        }
        assert_eq!(ledger.len(), 1_000);
        let after = later(now, STEP);
        assert_eq!(
            ledger.take("host-0.example.com", after, STEP),
            None,
            "its step has ended"
        );
        assert_eq!(ledger.len(), 1, "only the hostname just taken");
        ledger.record("host-0.example.com", after, after);
        assert_eq!(ledger.len(), 0, "a step that ends at once holds nothing");
    }
}
