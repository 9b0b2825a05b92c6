//! One paged initial list at a time across the operator's watches.
//!
//! Where the apiserver cannot stream a watch's initial objects, each watch lists them in
//! pages of the largest objects that fit, and holds a page until it is trimmed. Watches
//! that list together (every kind and every Secret namespace at a start, or all of them
//! again after an apiserver restart) would each hold a page: with the gate, a watch
//! starts its list only once no other one is listing, so the operator holds one page at
//! a time whatever the number of namespaces.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::runtime::watcher;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How a watch meets its initial objects: its config, and the gate its list waits for.
#[derive(Clone, Debug)]
pub(super) struct Listing {
    pub(super) config: watcher::Config,
    pub(super) gate: ListGate,
}

/// The gate every paged watch of a process shares; open (no gate) where lists stream.
#[derive(Clone, Debug, Default)]
pub(super) struct ListGate(Option<Arc<Semaphore>>);

impl ListGate {
    /// One list at a time.
    pub(super) fn one_at_a_time() -> Self {
        Self(Some(Arc::new(Semaphore::new(1))))
    }

    /// `events` of one watch (straight from [`watcher::watcher`]), whose list waits
    /// for the gate: a watch announces a list (`Init`) before it asks for the first
    /// page, and asks only when polled again, so holding back the announcement holds
    /// back the list. The gate opens at the end of the list (`InitDone`) or when it
    /// fails.
    pub(super) fn guard<K, S>(
        &self,
        events: S,
    ) -> impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send + use<K, S>
    where
        K: Send + 'static,
        S: Stream<Item = watcher::Result<watcher::Event<K>>> + Send + Unpin + 'static,
    {
        let gate = self.0.clone();
        futures::stream::unfold(
            (events, gate, None::<OwnedSemaphorePermit>),
            |(mut events, gate, mut permit)| async move {
                let event = events.next().await?;
                match (&event, &gate) {
                    (Ok(watcher::Event::Init), Some(gate)) if permit.is_none() => {
                        permit = gate.clone().acquire_owned().await.ok();
                    }
                    (Ok(watcher::Event::InitDone) | Err(_), _) => permit = None,
                    _ => {}
                }
                Some((event, (events, gate, permit)))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures::stream;
    use kube::runtime::watcher::Event;

    use super::*;

    /// A watch's events as it produces them, each recorded with its watch's name.
    fn watch(
        name: &'static str,
        events: Vec<Event<u32>>,
        seen: &Arc<Mutex<Vec<String>>>,
    ) -> impl Stream<Item = watcher::Result<Event<u32>>> + Send + Unpin + 'static {
        let seen = seen.clone();
        stream::iter(events).map(move |event| {
            let word = match &event {
                Event::Init => "init",
                Event::InitApply(_) => "page",
                Event::InitDone => "done",
                Event::Apply(_) | Event::Delete(_) => "event",
            };
            seen.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(format!("{name}:{word}"));
            Ok(event)
        })
    }

    fn listing() -> Vec<Event<u32>> {
        vec![
            Event::Init,
            Event::InitApply(1),
            Event::InitApply(2),
            Event::InitDone,
            Event::Apply(3),
        ]
    }

    #[tokio::test]
    async fn a_watch_lists_only_while_no_other_one_does() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let gate = ListGate::one_at_a_time();
        let both = stream::select(
            gate.guard(watch("a", listing(), &seen)).boxed(),
            gate.guard(watch("b", listing(), &seen)).boxed(),
        );
        assert_eq!(both.count().await, 10);
        let seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        // Each list runs from its first page to its end with no page of the other in between.
        let mut listing: Option<char> = None;
        for entry in &seen {
            let (name, word) = entry.split_once(':').unwrap_or_default();
            let name = name.chars().next().unwrap_or_default();
            match word {
                "page" => {
                    assert!(listing.is_none_or(|l| l == name), "{seen:?}");
                    listing = Some(name);
                }
                "done" => listing = None,
                _ => {}
            }
        }
    }

    #[tokio::test]
    async fn an_open_gate_holds_nothing_back_and_a_failed_list_opens_it() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let open = ListGate::default();
        assert_eq!(open.guard(watch("a", listing(), &seen)).count().await, 5);

        let gate = ListGate::one_at_a_time();
        let failing = stream::iter(vec![Ok(Event::<u32>::Init), Err(watcher::Error::NoResourceVersion)]);
        assert_eq!(gate.guard(failing).count().await, 2);
        let after = gate.guard(watch("b", listing(), &seen));
        assert_eq!(after.count().await, 5, "the failed list left the gate open");
    }
}
