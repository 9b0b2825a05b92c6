//! Rate limiters on tokio's clock (governor's GCRA), so waiting follows tokio time and
//! a test with a paused clock exercises the real limiter without real waiting.

use std::collections::HashMap;
use std::ops::Add;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{NotUntil, Quota, RateLimiter};
use tokio::sync::Mutex;

use crate::fairness::FairQueue;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TokioInstant(tokio::time::Instant);

impl Add<Nanos> for TokioInstant {
    type Output = Self;

    fn add(self, duration: Nanos) -> Self {
        TokioInstant(self.0 + Duration::from(duration))
    }
}

impl Reference for TokioInstant {
    fn duration_since(&self, earlier: Self) -> Nanos {
        self.0.saturating_duration_since(earlier.0).into()
    }

    fn saturating_sub(&self, duration: Nanos) -> Self {
        TokioInstant(self.0.checked_sub(duration.into()).unwrap_or(self.0))
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TokioClock;

impl Clock for TokioClock {
    type Instant = TokioInstant;

    fn now(&self) -> TokioInstant {
        TokioInstant(tokio::time::Instant::now())
    }
}

type DirectGcra = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<TokioInstant>>;
type KeyedGcra = RateLimiter<i64, HashMapStateStore<i64>, TokioClock, NoOpMiddleware<TokioInstant>>;

/// Waits for `turn` (tokio's Mutex queues its waiters in arrival order), then until
/// `check` admits; answers how long that took. Waiting in turn keeps a caller that
/// needs several requests (pages) from being overtaken again and again.
async fn in_turn(turn: &Mutex<()>, check: impl FnMut() -> Result<(), NotUntil<TokioInstant>>) -> Duration {
    let started = tokio::time::Instant::now();
    let _turn = turn.lock().await;
    admitted(check).await;
    started.elapsed()
}

/// Waits until `check` admits.
async fn admitted(mut check: impl FnMut() -> Result<(), NotUntil<TokioInstant>>) {
    while let Err(not_until) = check() {
        tokio::time::sleep(not_until.wait_time_from(TokioClock.now())).await;
    }
}

/// Keys held before idle ones are pruned.
const KEYS_BEFORE_PRUNING: usize = 64;

/// The queue of each key, and how many there were after the last pruning.
#[derive(Default)]
struct Turns {
    queues: HashMap<i64, Arc<FairQueue>>,
    after_pruning: usize,
}

/// One limiter per key (the Pull Zone id for the logging API), its callers served by
/// party (namespace) in turn, each party's in arrival order.
/// Keys nobody waits on and whose quota has recovered are forgotten whenever the keys
/// held double, so keys that come and go (a Pull Zone id changed in a spec) hold at
/// most about twice those in use.
pub(crate) struct KeyedLimiter {
    gcra: KeyedGcra,
    turns: std::sync::Mutex<Turns>,
}

impl KeyedLimiter {
    pub(crate) fn new(quota: Quota) -> Self {
        Self {
            gcra: RateLimiter::new(quota, HashMapStateStore::default(), TokioClock),
            turns: std::sync::Mutex::default(),
        }
    }

    /// Waits until `key` may send one more request of `party`; returns how long it
    /// waited. The parties waiting on one key take its budget in turn.
    pub(crate) async fn until_ready(&self, key: i64, party: &str) -> Duration {
        let turn = {
            let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
            let held = turns.queues.len().max(self.gcra.len());
            if held >= (2 * turns.after_pruning).max(KEYS_BEFORE_PRUNING) {
                self.gcra.retain_recent();
                turns.queues.retain(|_, queue| Arc::strong_count(queue) > 1);
                turns.after_pruning = turns.queues.len().max(self.gcra.len());
            }
            turns
                .queues
                .entry(key)
                .or_insert_with(|| Arc::new(FairQueue::new(1)))
                .clone()
        };
        let started = tokio::time::Instant::now();
        let _turn = turn.enter(party).await;
        admitted(|| self.gcra.check_key(&key)).await;
        started.elapsed()
    }

    /// Keys held (waited on, or pruned at most since the count doubled).
    #[cfg(test)]
    fn keys(&self) -> (usize, usize) {
        let turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        (turns.queues.len(), self.gcra.len())
    }
}

/// Which line a request waits in for the shared quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// The reads and writes of work that changes the platform (access lists, restores,
    /// certificates): never behind more than one poll.
    Change,
    /// Observe-only polls: never behind more than one change.
    Poll,
}

impl Lane {
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Change => "change",
            Lane::Poll => "poll",
        }
    }
}

/// One limiter for everything. Each lane first waits in a line of its own that serves
/// the parties (namespaces) in turn, so at most one change and one poll are ever queued
/// for the quota, and they take it in turn: a change waits for at most one poll and
/// the changes of other parties ahead of it, one each, however many requests one
/// tenant has waiting; a poll likewise.
pub(crate) struct DirectLimiter {
    gcra: DirectGcra,
    turn: Mutex<()>,
    changes: FairQueue,
    polls: FairQueue,
}

impl DirectLimiter {
    pub(crate) fn new(quota: Quota) -> Self {
        Self {
            gcra: RateLimiter::new(quota, InMemoryState::default(), TokioClock),
            turn: Mutex::default(),
            changes: FairQueue::new(1),
            polls: FairQueue::new(1),
        }
    }

    /// Waits until one more request of `party` may go in `lane`; returns how long it
    /// waited.
    pub(crate) async fn until_ready(&self, lane: Lane, party: &str) -> Duration {
        let started = tokio::time::Instant::now();
        let line = match lane {
            Lane::Change => &self.changes,
            Lane::Poll => &self.polls,
        };
        let _turn_in_line = line.enter(party).await;
        in_turn(&self.turn, || self.gcra.check()).await;
        started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use tokio::task::JoinHandle;

    use super::*;
    use crate::api::config::default_logging_quota;

    #[tokio::test(start_paused = true)]
    async fn default_logging_quota_never_exceeds_thirty_per_ten_seconds() {
        let limiter = KeyedLimiter::new(default_logging_quota());
        let start = tokio::time::Instant::now();
        let mut sent = Vec::new();
        for _ in 0..100 {
            limiter.until_ready(7, "team").await;
            sent.push(start.elapsed());
        }
        for (i, &t) in sent.iter().enumerate() {
            let in_window = sent[i..]
                .iter()
                .take_while(|&&u| u < t + Duration::from_secs(10))
                .count();
            assert!(in_window <= 29, "{in_window} requests within 10 s from {t:?}");
        }
        assert!(
            start.elapsed() >= Duration::from_secs(30),
            "100 requests take {:?}",
            start.elapsed()
        );
        assert_eq!(
            limiter.until_ready(8, "team").await,
            Duration::ZERO,
            "other keys have their own budget"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn keys_that_went_idle_are_forgotten() {
        let limiter = KeyedLimiter::new(default_logging_quota());
        // A thousand keys a minute, for ten minutes: each key used once.
        for minute in 0..10 {
            for key in 0..1_000 {
                limiter.until_ready(minute * 1_000 + key, "team").await;
            }
            tokio::time::advance(Duration::from_secs(60)).await;
        }
        limiter.until_ready(-1, "team").await;
        let (queues, states) = limiter.keys();
        // Of 10,000 keys, at most twice those of the last minute are held.
        assert!(
            queues <= 2_001 && states <= 2_001,
            "{queues} queues, {states} limiter states held"
        );
    }

    /// A limiter of 10/s with 1,000 requests of `busy` waiting in `lane`.
    async fn with_a_thousand_waiting(
        lane: Lane,
        busy: &'static str,
    ) -> (Arc<DirectLimiter>, Vec<JoinHandle<Duration>>) {
        let limiter = Arc::new(DirectLimiter::new(Quota::per_second(
            std::num::NonZeroU32::new(10).expect("non-zero"),
        )));
        let waiting = (0..1_000)
            .map(|_| {
                let limiter = limiter.clone();
                tokio::spawn(async move { limiter.until_ready(lane, busy).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_secs(5)).await;
        (limiter, waiting)
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_waits_for_at_most_one_of_the_other_lane() {
        for (flooded, asking) in [(Lane::Poll, Lane::Change), (Lane::Change, Lane::Poll)] {
            let (limiter, waiting) = with_a_thousand_waiting(flooded, "busy").await;
            let waited = limiter.until_ready(asking, "quiet").await;
            assert!(
                waited <= Duration::from_millis(200),
                "{asking:?} behind 1,000 {flooded:?} requests at 10/s waited {waited:?}"
            );
            waiting.iter().for_each(JoinHandle::abort);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_party_with_a_thousand_requests_waiting_delays_another_by_one_request() {
        for lane in [Lane::Poll, Lane::Change] {
            party_with_a_thousand_waiting(lane).await;
        }
    }

    async fn party_with_a_thousand_waiting(lane: Lane) {
        let (limiter, busy) = with_a_thousand_waiting(lane, "team-a").await;
        // Four requests of team-b, one after the other.
        let mut waits = Vec::new();
        for _ in 0..4 {
            waits.push(limiter.until_ready(lane, "team-b").await);
        }
        // Each waits for the request in the quota, one of team-a's and its own slot
        // (100 ms each); in arrival order it would wait for 950 of team-a's.
        let longest = waits.iter().max().copied().unwrap_or_default();
        assert!(
            longest <= Duration::from_millis(300),
            "{lane:?}: team-b behind 1,000 requests of team-a at 10/s waited {waits:?}"
        );
        busy.iter().for_each(JoinHandle::abort);
        let waited = limiter.until_ready(lane, "team-a").await;
        assert!(
            waited <= Duration::from_millis(250),
            "{lane:?}: the line goes past the waiters that gave up: {waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_party_flooding_a_key_delays_another_partys_request_by_one_of_its_own() {
        let limiter = Arc::new(KeyedLimiter::new(default_logging_quota()));
        let busy: Vec<_> = (0..300)
            .map(|_| {
                let limiter = limiter.clone();
                tokio::spawn(async move { limiter.until_ready(7, "flooder").await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1)).await;
        // The key's budget is 30 requests in 10 s: 300 waiting take 100 s; the owner
        // waits for the one in its turn and its own interval.
        let waited = limiter.until_ready(7, "owner").await;
        assert!(waited <= Duration::from_secs(2), "the owner waited {waited:?}");
        for task in busy {
            task.abort();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn callers_are_served_in_arrival_order() {
        let limiter = Arc::new(KeyedLimiter::new(default_logging_quota()));
        for _ in 0..5 {
            limiter.until_ready(7, "team").await;
        }
        let (admitted, mut admissions) = tokio::sync::mpsc::unbounded_channel();
        let callers: Vec<_> = (0..20)
            .map(|caller| {
                let (limiter, admitted) = (limiter.clone(), admitted.clone());
                tokio::spawn(async move {
                    for page in 0..3 {
                        limiter.until_ready(7, "team").await;
                        let _ = admitted.send((caller, page));
                    }
                })
            })
            .collect();
        futures::future::join_all(callers).await;
        drop(admitted);
        let mut order = Vec::new();
        while let Some(admission) = admissions.recv().await {
            order.push(admission);
        }
        assert_eq!(order.len(), 60);
        assert!(
            order[..20].iter().all(|&(_, page)| page == 0),
            "every caller's first page goes before anyone's second: {order:?}"
        );
    }
}
