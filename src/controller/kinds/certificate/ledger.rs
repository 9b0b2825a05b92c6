//! The backoff step of each hostname's certificate completions in this process: at most
//! one completion of a hostname with one credential per step, whichever object names it
//! and however often it is asked for. Steps are per credential as well: a key the
//! platform refuses holds back its own completions, not those of another tenant's key.
//! The time comes in, so the ledger is tested without a cluster.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};

/// What completes a hostname: a credential (its identity, never the key) and the hostname.
pub(crate) type Completer<'a> = (&'a str, &'a str);

/// When the next completion of a hostname with a credential may be made, for each whose
/// step has not ended: at most one entry per credential and hostname, none whose time
/// has passed.
#[derive(Debug, Default)]
pub(crate) struct CompletionLedger {
    steps: Mutex<HashMap<(String, String), DateTime<Utc>>>,
}

/// A completer as the ledger knows it: the hostname in lowercase ASCII, without a
/// trailing dot.
fn key((credential, hostname): Completer<'_>) -> (String, String) {
    let hostname = hostname.strip_suffix('.').unwrap_or(hostname).to_ascii_lowercase();
    (credential.to_string(), hostname)
}

/// `now` plus `wait`, or the end of time when that overflows.
pub(crate) fn later(now: DateTime<Utc>, wait: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(wait)
        .ok()
        .and_then(|wait| now.checked_add_signed(wait))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

impl CompletionLedger {
    /// Takes the turn of `completer` at `now`. `None`: its step has ended, and the ledger
    /// now holds the hostname for `hold` (the longest a call can take) until
    /// [`Self::record`] says when the new step ends. `Some`: the end of its step, before
    /// which no completion of it is made.
    pub(crate) fn take(&self, completer: Completer<'_>, now: DateTime<Utc>, hold: Duration) -> Option<DateTime<Utc>> {
        let mut steps = self.pruned(now);
        let key = key(completer);
        if let Some(end) = steps.get(&key) {
            return Some(*end);
        }
        steps.insert(key, later(now, hold));
        None
    }

    /// Records the step that a completion by `completer` made at `now` started: the next
    /// one not before `end`.
    pub(crate) fn record(&self, completer: Completer<'_>, end: DateTime<Utc>, now: DateTime<Utc>) {
        let mut steps = self.pruned(now);
        let key = key(completer);
        if end > now {
            steps.insert(key, end);
        } else {
            steps.remove(&key);
        }
    }

    /// The steps, without those that ended by `now`.
    fn pruned(&self, now: DateTime<Utc>) -> MutexGuard<'_, HashMap<(String, String), DateTime<Utc>>> {
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
        assert_eq!(ledger.take(("k", "shop.example.com"), now, STEP), None);
        assert_eq!(
            ledger.take(("k", "Shop.Example.COM."), now, STEP),
            Some(later(now, STEP))
        );
        assert_eq!(ledger.take(("k", "other.example.com"), now, STEP), None);
        assert_eq!(
            ledger.take(("another key", "shop.example.com"), now, STEP),
            None,
            "a credential's steps are its own"
        );
        assert_eq!(ledger.len(), 3);
    }

    #[test]
    fn the_ledger_holds_no_step_that_has_ended() {
        let ledger = CompletionLedger::default();
        let now = at("2026-11-20T12:00:00Z");
        for i in 0..1_000 {
            let hostname = format!("host-{i}.example.com");
            assert_eq!(ledger.take(("k", &hostname), now, Duration::from_secs(120)), None);
            ledger.record(("k", &hostname), later(now, STEP), now);
        }
        assert_eq!(ledger.len(), 1_000);
        let after = later(now, STEP);
        assert_eq!(
            ledger.take(("k", "host-0.example.com"), after, STEP),
            None,
            "its step has ended"
        );
        assert_eq!(ledger.len(), 1, "only the hostname just taken");
        ledger.record(("k", "host-0.example.com"), after, after);
        assert_eq!(ledger.len(), 0, "a step that ends at once holds nothing");
    }
}
