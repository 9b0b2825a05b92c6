//! The operator's one Secret metadata watch. Its store is the [`SecretIndex`] every
//! kind reads; its changes requeue the objects that reference a Secret and drive the
//! Secret in-use protection. Secret data is never watched.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};

use super::list_gate::Listing;
use super::server::Health;
use crate::controller::framework::credentials::{NamespaceSet, SecretIndex};
use crate::controller::framework::object::keep_what_is_read;
use crate::controller::framework::shared::Shared;
use crate::controller::kinds::access_list::SecretFinalizer;

pub(super) type SecretMeta = PartialObjectMeta<Secret>;

/// The Secrets that changed, as a subscriber receives them.
pub(super) type SecretChanges = BoxStream<'static, Arc<SecretMeta>>;

/// Secret changes kept for the slowest subscriber before the watch waits for it.
const SUBSCRIBER_BUFFER: usize = 1024;

pub(super) struct SecretWatch {
    writer: Writer<SecretMeta>,
    /// The one finalizer of a Secret's that its store keeps.
    finalizer: SecretFinalizer,
}

impl SecretWatch {
    pub(super) fn new(finalizer: SecretFinalizer) -> (Self, SecretIndex) {
        let (store, writer) = reflector::store_shared(SUBSCRIBER_BUFFER);
        (Self { writer, finalizer }, SecretIndex::new(store))
    }

    pub(super) fn store(&self) -> Store<SecretMeta> {
        self.writer.as_reader()
    }

    /// A stream of the Secrets that change; every subscriber must be taken before
    /// [`SecretWatch::run`] and polled while it runs.
    pub(super) fn subscribe(&self) -> SecretChanges {
        match self.writer.subscribe() {
            Some(changes) => changes.boxed(),
            None => futures::stream::empty().boxed(),
        }
    }

    /// Follows the Secrets of `namespaces` (one cluster-wide watch for every
    /// namespace, none for none) until `stop`, met at start and at every relist as
    /// `listing` says: streamed, or in pages of the largest Secrets that fit, one list
    /// of the process at a time. A failing watch is logged and counted so that /readyz
    /// fails until it answers again.
    pub(super) async fn run(
        self,
        client: kube::Client,
        listing: Listing,
        namespaces: NamespaceSet,
        shared: Arc<Shared>,
        health: Arc<Health>,
        stop: impl Future<Output = ()> + Send,
    ) {
        let finalizer = self.finalizer.clone();
        let watch = |api: Api<SecretMeta>| {
            let finalizer = finalizer.clone();
            listing
                .gate
                .guard(watcher(api, listing.config.clone()).boxed())
                .default_backoff()
                .modify(move |secret: &mut SecretMeta| {
                    keep_what_is_read(&mut secret.metadata, Some(finalizer.as_str()))
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
            .reflect_shared(self.writer)
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
