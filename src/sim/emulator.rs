//! The emulator's state: the world behind a lock, its clock, the logging rate limits,
//! the request journal and programmed faults. No HTTP here.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::{Deserialize, Serialize};

use super::clock::SimClock;
use super::document::SimDocument;
use super::ratelimit::PullZoneLimiter;
use super::world::World;

/// One non-admin request, as recorded in the journal (`GET /_sim/requests`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    pub method: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub status: u16,
    /// Emulator time of the request, Unix milliseconds.
    pub time_ms: i64,
    /// Emulator time of the request, RFC 3339.
    pub time: String,
}

impl JournalEntry {
    /// Bytes the entry holds in memory.
    fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.method.len()
            + self.path.len()
            + self.query.as_ref().map_or(0, String::len)
            + self.time.len()
    }
}

/// The latest exchanges, within [`MAX_JOURNAL`] entries and [`MAX_JOURNAL_BYTES`].
#[derive(Debug, Default)]
struct Journal {
    entries: VecDeque<JournalEntry>,
    bytes: usize,
}

impl Journal {
    fn push(&mut self, entry: JournalEntry) {
        self.bytes += entry.footprint();
        self.entries.push_back(entry);
        while self.entries.len() > 1 && (self.entries.len() > MAX_JOURNAL || self.bytes > MAX_JOURNAL_BYTES) {
            if let Some(oldest) = self.entries.pop_front() {
                self.bytes -= oldest.footprint();
            }
        }
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

/// A programmed answer for the next `count` matching requests (`POST /_sim/faults`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    /// Only requests with this method (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Only requests whose path starts with this.
    pub path_prefix: String,
    /// The status to answer with; absent means "delay, then answer normally".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How many matching requests the fault applies to.
    pub count: u32,
    /// `Retry-After` header value, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// Delay before answering, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// JSON body of the answer (empty when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

/// The most exchanges the journal keeps (the latest).
pub(crate) const MAX_JOURNAL: usize = 200_000;
/// The most memory the journal's exchanges take (long URIs count in full).
pub(crate) const MAX_JOURNAL_BYTES: usize = 64 << 20;
/// Faults pending at once.
pub(crate) const MAX_FAULTS: usize = 1_000;

/// The emulator: everything its handlers share.
#[derive(Debug, Default)]
pub struct Sim {
    world: RwLock<World>,
    pub clock: SimClock,
    pub limiter: PullZoneLimiter,
    journal: Mutex<Journal>,
    faults: Mutex<Vec<Fault>>,
    changes: Arc<tokio::sync::Notify>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sim {
    pub fn new(document: SimDocument) -> Arc<Self> {
        let sim = Arc::new(Sim::default());
        sim.replace(document);
        sim
    }

    /// Replaces all state (document, events, logs, rate-limit history) with `document`.
    pub fn replace(&self, document: SimDocument) {
        self.set_clock(document.clock);
        self.limiter.clear();
        *self.world_mut() = World::new(document.complete());
    }

    pub fn world(&self) -> RwLockReadGuard<'_, World> {
        self.world.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The world to change; [`Sim::changes`] is told.
    pub fn world_mut(&self) -> RwLockWriteGuard<'_, World> {
        self.changes.notify_one();
        self.world.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the clock (`None`: real time); [`Sim::changes`] is told.
    pub fn set_clock(&self, now: Option<chrono::DateTime<chrono::Utc>>) {
        self.clock.set(now);
        self.changes.notify_one();
    }

    /// Told of every change of the document or the clock.
    pub fn changes(&self) -> Arc<tokio::sync::Notify> {
        self.changes.clone()
    }

    /// The current document: the fixtures with every change applied, and the clock.
    pub fn document(&self) -> SimDocument {
        let mut document = self.world().document.clone();
        document.clock = self.clock.fixed();
        document
    }

    /// Records an exchange; past `MAX_JOURNAL` entries or `MAX_JOURNAL_BYTES` the
    /// oldest are dropped.
    pub fn record(&self, entry: JournalEntry) {
        lock(&self.journal).push(entry);
    }

    pub fn journal(&self) -> Vec<JournalEntry> {
        lock(&self.journal).entries.iter().cloned().collect()
    }

    pub fn clear_journal(&self) {
        lock(&self.journal).clear();
    }

    /// Programs a fault; refused when `MAX_FAULTS` are pending.
    pub fn add_fault(&self, fault: Fault) -> Result<(), Fault> {
        let mut faults = lock(&self.faults);
        if faults.len() >= MAX_FAULTS {
            return Err(fault);
        }
        faults.push(fault);
        Ok(())
    }

    pub fn faults(&self) -> Vec<Fault> {
        lock(&self.faults).clone()
    }

    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
    }

    /// Takes one use of the first fault matching `method` and `path`.
    pub fn take_fault(&self, method: &str, path: &str) -> Option<Fault> {
        let mut faults = lock(&self.faults);
        let index = faults.iter().position(|f| {
            f.count > 0
                && path.starts_with(&f.path_prefix)
                && f.method.as_ref().is_none_or(|m| m.eq_ignore_ascii_case(method))
        })?;
        faults[index].count -= 1;
        let fault = faults[index].clone();
        if faults[index].count == 0 {
            faults.remove(index);
        }
        Some(fault)
    }

    /// The account of `key`, if it is a known key.
    pub fn account_of(&self, key: &str) -> Option<Arc<str>> {
        self.world().account_of(key)
    }
}

/// What [`Sim::generate`] added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Generated {
    pub events: usize,
    pub logs: usize,
}

/// Why synthetic data could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("cannot generate events: the fixtures define no Shield Zone")]
    NoShieldZone,
    #[error("cannot generate logs: the fixtures define no Pull Zone with logging enabled")]
    NoLoggingPullZone,
}

impl Sim {
    /// Adds synthetic events (spread over all Shield Zones) and CDN logs (spread over
    /// Pull Zones with logging enabled), deterministic for a given seed.
    pub fn generate(&self, events: usize, logs: usize, seed: u64) -> Result<Generated, GenerateError> {
        let now = self.clock.now();
        let mut world = self.world_mut();
        let zones: Vec<i64> = world.document.shield_zones.iter().map(|z| z.id).collect();
        if events > 0 && zones.is_empty() {
            return Err(GenerateError::NoShieldZone);
        }
        let pull_zones: Vec<i64> = world
            .document
            .pull_zones
            .iter()
            .filter(|z| z.logging_enabled)
            .map(|z| z.id)
            .collect();
        if logs > 0 && pull_zones.is_empty() {
            return Err(GenerateError::NoLoggingPullZone);
        }
        for (i, zone) in zones.iter().enumerate() {
            let share = share_of(events, zones.len(), i);
            let lists = world
                .shield_zone(*zone)
                .map(|z| z.access_lists.clone())
                .unwrap_or_default();
            let batch = super::generator::events(share, seed.wrapping_add(*zone as u64), now)
                .map(|event| super::traffic::as_the_lists_record(&lists, event));
            world.shield_zone_events_mut(*zone).insert(batch);
        }
        for (i, zone) in pull_zones.iter().enumerate() {
            let share = share_of(logs, pull_zones.len(), i);
            let day = (now - chrono::Duration::hours(24), now);
            let batch = super::generator::logs(share, seed, *zone, day);
            world.pull_zone_logs_mut(*zone).insert(batch);
        }
        Ok(Generated { events, logs })
    }
}

/// The `index`-th of `parts` near-equal shares of `total`.
fn share_of(total: usize, parts: usize, index: usize) -> usize {
    total / parts + usize::from(index < total % parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(query_bytes: usize) -> JournalEntry {
        JournalEntry {
            method: "GET".into(),
            path: "/mc/apps/app-1".into(),
            query: Some("q".repeat(query_bytes)),
            status: 200,
            time_ms: 0,
            time: "2026-11-20T12:00:00.000Z".into(),
        }
    }

    #[test]
    fn the_journal_is_bounded_in_bytes_whatever_the_uris() {
        let sim = Sim::default();
        let huge = 400 << 10;
        for _ in 0..300 {
            sim.record(entry(huge));
        }
        let kept = sim.journal();
        let bytes: usize = kept.iter().map(JournalEntry::footprint).sum();
        assert!(bytes <= MAX_JOURNAL_BYTES, "{bytes} bytes kept");
        assert_eq!(kept.len(), MAX_JOURNAL_BYTES / entry(huge).footprint());

        sim.record(entry(0));
        assert_eq!(
            sim.journal().last(),
            Some(&entry(0)),
            "the newest exchange is always kept"
        );
        sim.clear_journal();
        assert!(sim.journal().is_empty());
    }

    #[test]
    fn the_journal_keeps_the_latest_entries_by_count_too() {
        let mut journal = Journal::default();
        for i in 0..MAX_JOURNAL + 5 {
            journal.push(JournalEntry {
                status: (i % 500) as u16,
                ..entry(0)
            });
        }
        assert_eq!(journal.entries.len(), MAX_JOURNAL);
        assert_eq!(journal.entries.front().map(|e| e.status), Some(5));
    }

    #[test]
    fn a_search_reads_its_snapshot_while_the_world_changes() {
        let sim =
            Sim::new(SimDocument::from_yaml(include_str!("../../examples/edge-sim-fixtures.yaml")).expect("fixtures"));
        sim.generate(100, 0, 1).expect("events");
        let zone = sim.world().document.shield_zones[0].id;
        let snapshot = sim.world().shield_zone_events(zone);
        let before = snapshot.len();

        let more = super::super::generator::events(10, 2, sim.clock.now());
        sim.world_mut().shield_zone_events_mut(zone).insert(more);

        assert_eq!(
            snapshot.len(),
            before,
            "a search in progress sees the store it started with"
        );
        assert_eq!(sim.world().shield_zone_events(zone).len(), before + 10);
    }
}
