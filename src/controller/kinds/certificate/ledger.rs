//! The backoff step of each hostname's certificate completions in this process: at most
//! one completion of a hostname per step for each namespace and credential, whichever
//! of its objects names it and however often it is asked for. Steps are a tenant's own:
//! another namespace's objects naming the same hostname (with a shared key, or with a
//! key the platform refuses) neither spend nor hold back its steps. The time comes in,
//! so the ledger is tested without a cluster.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};

/// Who completes a hostname: the object's namespace, its credential (an identity,
/// never the key) and the hostname.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Completer<'a> {
    pub namespace: &'a str,
    pub credential: &'a str,
    pub hostname: &'a str,
}

/// A completer as the ledger keeps it: the hostname in lowercase ASCII, without a
/// trailing dot.
type Key = (String, String, String);

impl Completer<'_> {
    fn key(self) -> Key {
        let hostname = self.hostname.strip_suffix('.').unwrap_or(self.hostname);
        (
            self.namespace.to_string(),
            self.credential.to_string(),
            hostname.to_ascii_lowercase(),
        )
    }
}

/// When the next completion of each completer may be made, for those whose step has
/// not ended: at most one entry per completer, none whose time has passed.
#[derive(Debug, Default)]
pub(crate) struct CompletionLedger {
    steps: Mutex<HashMap<Key, DateTime<Utc>>>,
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
        let key = completer.key();
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
        let key = completer.key();
        if end > now {
            steps.insert(key, end);
        } else {
            steps.remove(&key);
        }
    }

    /// The steps, without those that ended by `now`.
    fn pruned(&self, now: DateTime<Utc>) -> MutexGuard<'_, HashMap<Key, DateTime<Utc>>> {
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

    fn of(namespace: &'static str, credential: &'static str, hostname: &'static str) -> Completer<'static> {
        Completer {
            namespace,
            credential,
            hostname,
        }
    }

    fn at(raw: &str) -> DateTime<Utc> {
        raw.parse().expect("valid time")
    }

    #[test]
    fn a_hostname_is_one_key_whatever_its_case_or_trailing_dot() {
        let ledger = CompletionLedger::default();
        let now = at("2026-11-20T12:00:00Z");
        assert_eq!(ledger.take(of("a", "k", "shop.example.com"), now, STEP), None);
        assert_eq!(
            ledger.take(of("a", "k", "Shop.Example.COM."), now, STEP),
            Some(later(now, STEP))
        );
        assert_eq!(ledger.take(of("a", "k", "other.example.com"), now, STEP), None);
        assert_eq!(
            ledger.take(of("a", "another key", "shop.example.com"), now, STEP),
            None,
            "a credential's steps are its own"
        );
        assert_eq!(
            ledger.take(of("b", "k", "shop.example.com"), now, STEP),
            None,
            "a namespace's steps are its own"
        );
        assert_eq!(ledger.len(), 4);
    }

    #[test]
    fn the_ledger_holds_no_step_that_has_ended() {
        let ledger = CompletionLedger::default();
        let now = at("2026-11-20T12:00:00Z");
        for i in 0..1_000 {
            let hostname = format!("host-{i}.example.com");
            let completer = Completer {
                hostname: &hostname,
                ..of("a", "k", "")
            };
            assert_eq!(ledger.take(completer, now, Duration::from_secs(120)), None);
            ledger.record(completer, later(now, STEP), now);
        }
        assert_eq!(ledger.len(), 1_000);
        let after = later(now, STEP);
        assert_eq!(
            ledger.take(of("a", "k", "host-0.example.com"), after, STEP),
            None,
            "its step has ended"
        );
        assert_eq!(ledger.len(), 1, "only the hostname just taken");
        ledger.record(of("a", "k", "host-0.example.com"), after, after);
        assert_eq!(ledger.len(), 0, "a step that ends at once holds nothing");
    }
}
