//! Fair queues, modelled on the apiserver's API Priority and Fairness: every party (a
//! namespace: one tenant's flow) waits in a queue of its own, and each seat that frees
//! goes to the party with a request waiting that holds the fewest seats, parties that
//! hold as many taking turns, one request each. A party with a thousand requests
//! waiting delays another's request by at most one of its own per seat, not by all of
//! them, and a party whose requests hold their seats long cannot gather them while
//! another waits; a party alone may take every seat.
//!
//! What waits is bounded by the requests the callers have: the queues hold one entry
//! per waiting request and drop a party once its queue is empty.

use std::collections::{HashMap, VecDeque};
use std::ops::Deref;
use std::sync::Arc;

use tokio::sync::oneshot;

/// Seats handed to parties in turn.
pub(crate) struct FairQueue {
    seats: usize,
    /// Seats only a party that holds none may take: a party that came to hold the
    /// others keeps them as long as its requests last (a poll waiting for the platform
    /// quota, say), and another party still gets one at once.
    reserved: usize,
    state: std::sync::Mutex<Queues>,
}

#[derive(Default)]
struct Queues {
    /// Seats taken.
    taken: usize,
    /// Seats taken, by party (parties holding none are not kept).
    held: HashMap<Arc<str>, usize>,
    waiting: HashMap<Arc<str>, VecDeque<oneshot::Sender<()>>>,
    /// Parties with requests waiting, the next to be served first among those that
    /// hold as many seats.
    order: VecDeque<Arc<str>>,
}

impl Queues {
    fn seat(&mut self, party: &Arc<str>) {
        *self.held.entry(party.clone()).or_default() += 1;
    }

    fn free(&mut self, party: &str) {
        if let Some(held) = self.held.get_mut(party) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                self.held.remove(party);
            }
        }
    }

    fn held(&self, party: &str) -> usize {
        self.held.get(party).copied().unwrap_or_default()
    }

    /// The waiting party that holds the fewest seats, the first in turn among equals:
    /// its place in `order`, and the seats it holds.
    fn next_party(&self) -> Option<(usize, usize)> {
        self.order
            .iter()
            .enumerate()
            .map(|(at, party)| (at, self.held(party)))
            .min_by_key(|&(at, held)| (held, at))
    }
}

/// A request's seat; handed to the next party's request when dropped. `Q` is how the
/// seat holds its queue: borrowed, or shared ([`FairQueue::enter_owned`]).
pub(crate) struct Seat<Q: Deref<Target = FairQueue>> {
    queue: Q,
    party: Arc<str>,
}

/// A request waiting for a seat. Dropped after a seat was handed to it but before it
/// took it (its request given up), it hands the seat on.
struct Waiting<'a> {
    queue: &'a FairQueue,
    party: Arc<str>,
    handed: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(mut handed) = self.handed.take()
            && handed.try_recv().is_ok()
        {
            self.queue.hand_on(&self.party);
        }
    }
}

impl FairQueue {
    /// A queue of `seats` seats (at least one).
    pub(crate) fn new(seats: usize) -> Self {
        Self::with_reserved(seats, 0)
    }

    /// A queue of `seats` seats, `reserved` of them (fewer than `seats`) only for
    /// parties that hold none.
    pub(crate) fn with_reserved(seats: usize, reserved: usize) -> Self {
        let seats = seats.max(1);
        Self {
            seats,
            reserved: reserved.min(seats - 1),
            state: std::sync::Mutex::default(),
        }
    }

    /// The seats taken below which a party holding `held` seats may take another.
    fn limit_for(&self, held: usize) -> usize {
        match held {
            0 => self.seats,
            _ => self.seats - self.reserved,
        }
    }

    fn queues(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for a seat for one request of `party`.
    pub(crate) async fn enter(&self, party: &str) -> Seat<&Self> {
        let party = self.take_seat(party).await;
        Seat { queue: self, party }
    }

    /// [`Self::enter`] for a seat that outlives the borrow of its queue (one held by
    /// a response body, say).
    pub(crate) async fn enter_owned(self: Arc<Self>, party: &str) -> Seat<Arc<Self>> {
        let party = self.take_seat(party).await;
        Seat { queue: self, party }
    }

    /// Waits until a seat is counted as `party`'s.
    async fn take_seat(&self, party: &str) -> Arc<str> {
        let party: Arc<str> = party.into();
        let mut waiting = {
            let mut queues = self.queues();
            if queues.taken < self.limit_for(queues.held(&party)) {
                queues.taken += 1;
                queues.seat(&party);
                return party;
            }
            let (hand, handed) = oneshot::channel();
            let queue = queues.waiting.entry(party.clone()).or_default();
            queue.push_back(hand);
            if queue.len() == 1 {
                queues.order.push_back(party.clone());
            }
            Waiting {
                queue: self,
                party,
                handed: Some(handed),
            }
        };
        if let Some(handed) = waiting.handed.as_mut() {
            // The sender is dropped only once a seat is handed on (the seat counted
            // as this party's).
            let _ = handed.await;
        }
        waiting.handed = None;
        waiting.party.clone()
    }

    /// Requests waiting for a seat.
    pub(crate) fn waiting(&self) -> usize {
        self.queues().waiting.values().map(VecDeque::len).sum()
    }

    /// Frees the seat `from` held and hands it to the first request still waiting of
    /// the next party ([`Queues::next_party`]), else leaves it free.
    fn hand_on(&self, from: &str) {
        let mut queues = self.queues();
        queues.free(from);
        while let Some((at, held)) = queues.next_party() {
            // The seat freed is still counted: it may go on if the others taken leave
            // this party room. Every other party waiting holds as many or more.
            if queues.taken.saturating_sub(1) >= self.limit_for(held) {
                break;
            }
            let Some(party) = queues.order.remove(at) else {
                break;
            };
            let Some(queue) = queues.waiting.get_mut(&party) else {
                continue;
            };
            let next = queue.pop_front();
            if queue.is_empty() {
                queues.waiting.remove(&party);
            } else {
                queues.order.push_back(party.clone());
            }
            // A waiter that gave up (its request was dropped) is skipped.
            if next.is_some_and(|hand| hand.send(()).is_ok()) {
                queues.seat(&party);
                return;
            }
        }
        queues.taken = queues.taken.saturating_sub(1);
    }
}

impl<Q: Deref<Target = FairQueue>> Drop for Seat<Q> {
    fn drop(&mut self) {
        self.queue.hand_on(&self.party);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// Requests of `party` that each hold a seat for `work`, logging their order.
    fn requests(
        queue: &Arc<FairQueue>,
        party: &'static str,
        count: usize,
        work: Duration,
        served: &Arc<std::sync::Mutex<Vec<&'static str>>>,
        held: &Arc<AtomicUsize>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        (0..count)
            .map(|_| {
                let (queue, served, held) = (queue.clone(), served.clone(), held.clone());
                tokio::spawn(async move {
                    let _seat = queue.enter(party).await;
                    let now_held = held.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now_held <= queue.seats, "{now_held} seats held");
                    served.lock().expect("log").push(party);
                    tokio::time::sleep(work).await;
                    held.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_party_with_a_thousand_requests_waiting_delays_another_by_one_request_per_seat() {
        let queue = Arc::new(FairQueue::new(4));
        let served = Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = Arc::new(AtomicUsize::new(0));
        let work = Duration::from_millis(100);
        let mut tasks = requests(&queue, "busy", 1000, work, &served, &held);
        // Let the busy party fill every seat and queue the rest.
        tokio::time::sleep(work / 2).await;
        assert_eq!(queue.waiting(), 996);
        tasks.extend(requests(&queue, "lone", 1, work, &served, &held));
        for task in tasks {
            task.await.expect("no request panics");
        }
        let served = served.lock().expect("log");
        let lone_at = served.iter().position(|p| *p == "lone").expect("served");
        // Behind the four seated when it came, and the busy party's next in line.
        assert!(lone_at <= 4 + 1, "the lone request came {lone_at}th");
        assert_eq!(served.len(), 1001);
        assert_eq!(queue.waiting(), 0);
        assert_eq!(queue.queues().taken, 0, "every seat freed");
        assert!(queue.queues().order.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn parties_with_work_take_turns_whatever_their_backlog() {
        let queue = Arc::new(FairQueue::new(1));
        let served = Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = Arc::new(AtomicUsize::new(0));
        let work = Duration::from_millis(10);
        let _first = queue.enter("a").await;
        let mut tasks = requests(&queue, "a", 50, work, &served, &held);
        tokio::time::sleep(work).await;
        tasks.extend(requests(&queue, "b", 3, work, &served, &held));
        tokio::time::sleep(work).await;
        drop(_first);
        for task in tasks {
            task.await.expect("no request panics");
        }
        let served = served.lock().expect("log");
        assert_eq!(served[..6], ["a", "b", "a", "b", "a", "b"], "{served:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_party_whose_requests_hold_their_seats_long_cannot_gather_them_while_another_waits() {
        let queue = Arc::new(FairQueue::new(4));
        let served = Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = Arc::new(AtomicUsize::new(0));
        let start = tokio::time::Instant::now();
        // The slow party's requests hold a seat 100 times as long as the quick one's.
        let slow = requests(&queue, "slow", 40, Duration::from_secs(10), &served, &held);
        tokio::time::sleep(Duration::from_millis(1)).await;
        let quick = requests(&queue, "quick", 40, Duration::from_millis(100), &served, &held);
        for task in quick {
            task.await.expect("no request panics");
        }
        // Once the first slow requests end, the quick party keeps half the seats while
        // it has work (40 requests on 2 seats: 2 s); taken in turn, the seats would go
        // back to the slow party one by one, and the quick one would wait for them.
        let quick_done = start.elapsed();
        assert!(
            quick_done <= Duration::from_secs(13),
            "the quick party took {quick_done:?}"
        );
        for task in slow {
            task.await.expect("no request panics");
        }
        assert_eq!(queue.queues().taken, 0);
        assert!(queue.queues().held.is_empty(), "no party holds a seat");
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_given_up_hands_its_seat_on() {
        let queue = Arc::new(FairQueue::new(1));
        let seat = queue.enter("a").await;
        let given_up = tokio::spawn({
            let queue = queue.clone();
            async move {
                let _seat = queue.enter("b").await;
            }
        });
        let waiting = tokio::spawn({
            let queue = queue.clone();
            async move {
                let _seat = queue.enter("c").await;
            }
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        given_up.abort();
        let _ = given_up.await;
        drop(seat);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("the seat reached c")
            .expect("no panic");
        assert_eq!(queue.queues().taken, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_party_holding_its_seats_long_leaves_the_reserved_ones_to_the_others() {
        let queue = Arc::new(FairQueue::with_reserved(16, 2));
        let served = Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = Arc::new(AtomicUsize::new(0));
        // The busy party's requests hold their seats for a minute: it gets 14 of 16.
        let busy = requests(&queue, "busy", 100, Duration::from_secs(60), &served, &held);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(queue.queues().taken, 14);
        let start = tokio::time::Instant::now();
        let lone = requests(&queue, "lone", 1, Duration::from_millis(10), &served, &held);
        for task in lone {
            task.await.expect("no request panics");
        }
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "the lone request waited {:?}",
            start.elapsed()
        );
        for task in busy {
            task.await.expect("no request panics");
        }
        assert_eq!(queue.queues().taken, 0, "every seat freed");
        assert_eq!(served.lock().expect("log").len(), 101);
    }
}
