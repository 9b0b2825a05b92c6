//! The operator's one Secret metadata watch. Its store is the [`SecretIndex`] every
//! kind reads; its changes requeue the objects that reference a Secret and drive the
//! Secret in-use protection. Secret data is never watched.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};

use super::list_gate::Listing;
use super::server::Health;
use crate::controller::framework::pipeline::kind::SecretChanges;
use crate::controller::framework::pipeline::object::keep_what_is_read;
use crate::controller::framework::services::credentials::{NamespaceSet, SecretIndex};
use crate::controller::framework::services::shared::Shared;

/// Secret changes kept for the slowest subscriber before the watch waits for it.
const SUBSCRIBER_BUFFER: usize = 1024;

pub(super) struct SecretWatch {
    /// Taken by [`SecretWatch::run`]: subscriptions come before.
    writer: std::sync::Mutex<Option<Writer<PartialObjectMeta<Secret>>>>,
    store: Store<PartialObjectMeta<Secret>>,
    /// The finalizers of a Secret's that its store keeps: those the kinds put on Secrets.
    finalizers: Arc<[String]>,
}

impl SecretWatch {
    pub(super) fn new(finalizers: Vec<String>) -> (Self, SecretIndex) {
        let (store, writer) = reflector::store_shared(SUBSCRIBER_BUFFER);
        let watch = Self {
            writer: std::sync::Mutex::new(Some(writer)),
            store: store.clone(),
            finalizers: finalizers.into(),
        };
        (watch, SecretIndex::new(store))
    }

    pub(super) fn store(&self) -> Store<PartialObjectMeta<Secret>> {
        self.store.clone()
    }

    /// A stream of the Secrets that change; every subscriber must be taken before
    /// [`SecretWatch::run`] and polled while it runs.
    pub(super) fn subscribe(&self) -> SecretChanges {
        let writer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match writer.as_ref().map(Writer::subscribe) {
            Some(Some(changes)) => changes.boxed(),
            Some(None) => futures::stream::empty().boxed(),
            None => {
                tracing::error!("a subscription to Secret changes taken after the watch started sees none");
                futures::stream::empty().boxed()
            }
        }
    }

    /// Follows the Secrets of `namespaces` (one cluster-wide watch for every
    /// namespace, none for none) until `stop`, met at start and at every relist as
    /// `listing` says: streamed, or in pages of the largest Secrets that fit, one list
    /// of the process at a time. A failing watch is logged and counted so that /readyz
    /// fails until it answers again.
    pub(super) async fn run(
        &self,
        client: kube::Client,
        listing: Listing,
        namespaces: NamespaceSet,
        shared: Arc<Shared>,
        health: Arc<Health>,
        stop: impl Future<Output = ()> + Send,
    ) {
        let taken = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(writer) = taken else {
            tracing::error!("the Secret metadata watch runs once");
            return;
        };
        let finalizers = self.finalizers.clone();
        let watch = |api: Api<PartialObjectMeta<Secret>>| {
            let finalizers = finalizers.clone();
            listing
                .gate
                .guard(watcher(api, listing.config.clone()).boxed())
                .default_backoff()
                .modify(move |secret: &mut PartialObjectMeta<Secret>| {
                    keep_what_is_read(&mut secret.metadata, &finalizers)
                })
                .boxed()
        };
        let events = match &namespaces {
            NamespaceSet::All => watch(Api::all(client)),
            NamespaceSet::Only(names) => {
                futures::stream::select_all(names.iter().map(|ns| watch(Api::namespaced(client.clone(), ns)))).boxed()
            }
            NamespaceSet::None => return,
        };
        let failing = AtomicBool::new(false);
        events
            .reflect_shared(writer)
            .take_until(stop)
            .for_each(|event| {
                match event {
                    Ok(event) => {
                        health.watch_recovered(&failing);
                        shared.access_keys.follow_secrets(&event);
                    }
                    Err(error) => {
                        health.watch_failed(&failing);
                        tracing::error!(%error, "the Secret metadata watch fails; /readyz reports it");
                    }
                }
                std::future::ready(())
            })
            .await;
    }
}
