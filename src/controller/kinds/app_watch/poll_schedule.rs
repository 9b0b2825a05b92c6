//! When an observe-only object (a ContainerAppWatch) polls the platform. Each object
//! polls on its own phase within its interval, so many objects spread evenly over the
//! interval instead of polling together. An object whose data is still fresh is not
//! polled again, for example after an operator restart. A poll that starts late says
//! by how much. Pure: the time comes in.
//!
//! Polls queue for the global platform quota, the namespaces served in turn and each
//! namespace's polls in the order they fall due. When the quota cannot serve every
//! interval, the watches of the busiest namespaces are late by about the same amount and
//! none starves, while a namespace with few watches stays on time. The next poll is placed on the object's phase at least half an interval
//! after the last one, so lateness does not accumulate.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use kube::runtime::watcher::Event;

use super::resource::ContainerAppWatch;
use crate::resources::object_key;

/// Lateness at or under this (or a tenth of the interval, if longer) is on time.
pub(super) const ON_TIME_TOLERANCE: Duration = Duration::from_secs(5);
/// A reconcile this close to the due time polls instead of waiting again.
const EARLY_TOLERANCE_MS: i64 = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollSchedule {
    interval_ms: i64,
    phase_ms: i64,
}

/// What a reconcile does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollDecision {
    /// Poll; `late` is how long after its due time (zero when on time or forced).
    Poll { late: Duration },
    /// The last poll's data is fresh: wait until this time (Unix ms).
    Wait { due_ms: i64 },
}

impl PollSchedule {
    /// The schedule of the object named by `key` (its UID, or namespace/name).
    pub fn new(interval: Duration, key: &str) -> Self {
        let interval_ms = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX).max(1);
        let phase_ms = i64::try_from(fnv1a(key.as_bytes()) % interval_ms as u64).unwrap_or(0);
        Self { interval_ms, phase_ms }
    }

    /// The first time on the object's phase at least half an interval after `after_ms`.
    pub fn next_after(&self, after_ms: i64) -> i64 {
        let earliest = after_ms.saturating_add(self.interval_ms / 2);
        let offset = (self.phase_ms - earliest).rem_euclid(self.interval_ms);
        earliest.saturating_add(offset)
    }

    /// When the poll that started at `at_ms` is followed: on the object's phase, or
    /// after `retry` (the backoff after failed reads) when that comes sooner.
    pub fn next_due(&self, at_ms: i64, retry: Option<Duration>) -> i64 {
        let on_phase = self.next_after(at_ms);
        match retry {
            Some(retry) => on_phase.min(at_ms.saturating_add(i64::try_from(retry.as_millis()).unwrap_or(i64::MAX))),
            None => on_phase,
        }
    }

    /// Whether to poll at `now_ms`, given when the status' data was read (`None`: never)
    /// and whether the spec changed since (a changed spec polls at once).
    pub fn decide(&self, observed_ms: Option<i64>, spec_changed: bool, now_ms: i64) -> PollDecision {
        let due_ms = observed_ms
            .filter(|_| !spec_changed)
            .map(|observed_ms| self.next_after(observed_ms));
        Self::decide_due(due_ms, now_ms)
    }

    /// Whether to poll at `now_ms` when the next poll is due at `due_ms` (`None`: now).
    pub fn decide_due(due_ms: Option<i64>, now_ms: i64) -> PollDecision {
        let Some(due_ms) = due_ms else {
            return PollDecision::Poll { late: Duration::ZERO };
        };
        if now_ms < due_ms - EARLY_TOLERANCE_MS {
            return PollDecision::Wait { due_ms };
        }
        let late = u64::try_from(now_ms - due_ms).unwrap_or_default();
        PollDecision::Poll {
            late: Duration::from_millis(late),
        }
    }

    /// Whether a poll `late` by this much is late enough to say so.
    pub fn is_late(&self, late: Duration) -> bool {
        let tenth = Duration::from_millis(u64::try_from(self.interval_ms / 10).unwrap_or_default());
        late > ON_TIME_TOLERANCE.max(tenth)
    }
}

/// A poll this process made: for which generation, how many polls in a row had a
/// failed read (this one included) and when the next is due (Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastPoll {
    pub generation: Option<i64>,
    pub failed_in_row: u32,
    pub due_ms: i64,
}

/// The last poll of each object in this process, by object key. The status does not
/// carry every poll's time (that would be a status write per poll), so this is what
/// schedules the next one; after a restart the status' `observedAt` stands in.
#[derive(Debug, Default)]
pub struct PollLedger {
    polls: Mutex<HashMap<String, LastPoll>>,
    /// The keys of a list under way (at start, or a relist after a watch gap).
    listing: Mutex<Option<HashSet<String>>>,
}

impl PollLedger {
    /// Follows the kind's watch: a deleted object is forgotten, and so, at the end of
    /// each list, is every object the list did not hold (deleted while the watch was
    /// away).
    pub fn follow(&self, event: &Event<ContainerAppWatch>) {
        let mut listing = self.listing.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            Event::Delete(watch) => self.forget(&object_key(watch)),
            Event::Init => *listing = Some(HashSet::new()),
            Event::InitApply(watch) => {
                listing.get_or_insert_default().insert(object_key(watch));
            }
            Event::InitDone => {
                let listed = listing.take().unwrap_or_default();
                self.lock().retain(|key, _| listed.contains(key));
            }
            Event::Apply(_) => {}
        }
    }

    pub fn last(&self, key: &str) -> Option<LastPoll> {
        self.lock().get(key).copied()
    }

    pub fn record(&self, key: String, poll: LastPoll) {
        self.lock().insert(key, poll);
    }

    fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, LastPoll>> {
        self.polls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// FNV-1a: a stable spread of keys over the interval, the same in every process.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn a_thousand_objects_spread_evenly_over_the_interval() {
        let mut per_ten_seconds = [0usize; 6];
        for i in 0..1_000 {
            let schedule = PollSchedule::new(MINUTE, &format!("edge/watch-{i:04}"));
            per_ten_seconds[(schedule.next_after(0) % 60_000 / 10_000) as usize] += 1;
        }
        for (slot, count) in per_ten_seconds.iter().enumerate() {
            assert!((130..=205).contains(count), "slot {slot}: {count} of 1000");
        }
    }

    #[test]
    fn fresh_data_waits_for_its_phase_and_a_spec_change_polls_at_once() {
        let schedule = PollSchedule::new(MINUTE, "edge/shop");
        let observed = 1_000_000;
        let due = schedule.next_after(observed);
        assert_eq!(
            schedule.decide(Some(observed), false, observed + 5_000),
            PollDecision::Wait { due_ms: due }
        );
        assert_eq!(
            schedule.decide(Some(observed), true, observed + 5_000),
            PollDecision::Poll { late: Duration::ZERO }
        );
        assert_eq!(
            schedule.decide(None, false, observed),
            PollDecision::Poll { late: Duration::ZERO }
        );
        assert_eq!(
            schedule.decide(Some(observed), false, due + 34_000),
            PollDecision::Poll {
                late: Duration::from_secs(34)
            }
        );
        assert!(schedule.is_late(Duration::from_secs(34)));
        assert!(!schedule.is_late(Duration::from_secs(5)));
        assert!(!PollSchedule::new(Duration::from_secs(600), "x").is_late(Duration::from_secs(50)));
    }

    #[test]
    fn a_retry_after_failed_reads_comes_before_the_phase_and_never_after_it() {
        let schedule = PollSchedule::new(MINUTE, "edge/shop");
        let at = 1_000_000;
        assert_eq!(schedule.next_due(at, None), schedule.next_after(at));
        assert_eq!(schedule.next_due(at, Some(Duration::from_secs(5))), at + 5_000);
        assert_eq!(
            schedule.next_due(at, Some(Duration::from_secs(3_600))),
            schedule.next_after(at)
        );
        assert_eq!(
            PollSchedule::decide_due(Some(at + 5_000), at + 4_500),
            PollDecision::Poll { late: Duration::ZERO }
        );
        assert_eq!(
            PollSchedule::decide_due(Some(at + 5_000), at + 1_000),
            PollDecision::Wait { due_ms: at + 5_000 }
        );
    }

    proptest! {
        #[test]
        fn the_next_poll_is_on_phase_between_half_and_one_and_a_half_intervals_later(
            interval_s in 5u64..7_200,
            key in "[a-z0-9/-]{1,40}",
            after in 0i64..4_000_000_000_000,
        ) {
            let schedule = PollSchedule::new(Duration::from_secs(interval_s), &key);
            let interval = interval_s as i64 * 1000;
            let next = schedule.next_after(after);
            prop_assert!(next >= after + interval / 2);
            prop_assert!(next < after + interval / 2 + interval);
            prop_assert_eq!(next.rem_euclid(interval), schedule.phase_ms);
            prop_assert_eq!(schedule.next_after(next - interval / 2), next);
        }
    }

    #[test]
    fn the_ledger_forgets_objects_deleted_and_those_a_relist_no_longer_holds() {
        let watch = |name: &str| -> ContainerAppWatch {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "edgeplatform.io/v1alpha1", "kind": "ContainerAppWatch",
                "metadata": {"name": name, "namespace": "ns"}, "spec": {"appId": "app"},
            }))
            .expect("a ContainerAppWatch")
        };
        let poll = LastPoll {
            generation: Some(1),
            failed_in_row: 0,
            due_ms: 0,
        };
        let ledger = PollLedger::default();
        for name in ["kept", "deleted", "gone-while-away"] {
            ledger.record(object_key(&watch(name)), poll);
        }
        ledger.follow(&Event::Delete(watch("deleted")));
        assert!(ledger.last(&object_key(&watch("deleted"))).is_none());
        for event in [Event::Init, Event::InitApply(watch("kept")), Event::InitDone] {
            ledger.follow(&event);
        }
        assert!(ledger.last(&object_key(&watch("kept"))).is_some());
        assert!(ledger.last(&object_key(&watch("gone-while-away"))).is_none());
        assert!(
            ledger.listing.lock().expect("lock").is_none(),
            "nothing held after the list"
        );
    }
}
