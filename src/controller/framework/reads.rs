//! Platform reads shared between objects: one read of a Shield Zone's access lists
//! serves every AccessListConfig of that zone, one CDN summary every watch of the same
//! Pull Zone and window; and the CDN tails kept between polls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::cdn_tail::{CdnTail, TailSummary, advance};
use super::credentials::credential_id;
use super::error::ReconcileError;
use super::shared_reads::SharedReads;
use crate::api::models::shield::AccessListsResponse;
use crate::api::{ApiError, EdgeClient};

/// How long one read of a zone's access lists serves the reconciles of that zone (a
/// burst of creates shares it; resyncs of a zone happen at one instant anyway).
const ZONE_LISTS_TTL: Duration = Duration::from_secs(5);
/// How long one CDN summary serves the watches of the same Pull Zone and window: less
/// than the shortest poll interval (10 s), so each poll sees fresh logs.
const CDN_SUMMARY_TTL: Duration = Duration::from_secs(5);

/// How recent a read of a zone's access lists a reconcile needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListsFreshness {
    /// A spec to apply: a read of the last few seconds.
    Recent,
    /// An object converged to its spec (a restart, a touch): any read since the zone's
    /// last resync instant, this long ago, so a restarted operator reads each zone
    /// once however many objects it has. The resync instants read anew.
    SinceResync(Duration),
}

/// (credential identity, Shield Zone id).
type ZoneKey = (String, i64);
/// (credential identity, Pull Zone id, window).
type CdnKey = (String, i64, String);

/// A tail is dropped when no poll used it for its window and this long: by then it
/// holds nothing of the window.
const CDN_TAIL_IDLE: Duration = Duration::from_secs(600);

pub struct Reads {
    /// Shared, not copied, by the reconciles of a zone: a zone may hold hundreds of
    /// lists, and copying them at every reconcile made convergence quadratic.
    zone_lists: SharedReads<ZoneKey, Arc<AccessListsResponse>, ApiError>,
    cdn_summaries: SharedReads<CdnKey, TailSummary, ApiError>,
    /// Tails between polls, with when each was last used (Unix ms). A poll takes its
    /// tail out while it reads, so no lock is held across a request.
    cdn_tails: Mutex<HashMap<CdnKey, (i64, CdnTail)>>,
}

impl Default for Reads {
    fn default() -> Self {
        Self {
            zone_lists: SharedReads::new(ZONE_LISTS_TTL),
            cdn_summaries: SharedReads::new(CDN_SUMMARY_TTL),
            cdn_tails: Mutex::default(),
        }
    }
}

impl Reads {
    /// The zone's access lists, read at most once per [`ZONE_LISTS_TTL`] per credential
    /// (concurrent reconciles of one zone share a single read), or, for an object
    /// already converged, once since the zone's last resync instant.
    pub async fn zone_access_lists(
        &self,
        client: &EdgeClient,
        zone: i64,
        freshness: ListsFreshness,
    ) -> Result<Arc<AccessListsResponse>, ReconcileError> {
        let now = Instant::now();
        let recent = now.checked_sub(ZONE_LISTS_TTL);
        let not_before = match freshness {
            ListsFreshness::Recent => recent,
            ListsFreshness::SinceResync(since) => recent.zip(now.checked_sub(since)).map(|(a, b)| a.min(b)),
        };
        let lists = self
            .zone_lists
            .get_or_read_since((credential_id(client), zone), not_before, || async {
                client.access_lists(zone).await.map(Arc::new)
            })
            .await?;
        Ok(lists)
    }

    /// Records a write in the kept zone lists, so later reconciles see it.
    pub async fn note_access_list_write(
        &self,
        client: &EdgeClient,
        zone: i64,
        configuration_id: i64,
        enabled: bool,
        action: i32,
    ) {
        let key = (credential_id(client), zone);
        self.zone_lists
            .update(&key, |lists| {
                let lists = Arc::make_mut(lists);
                let items = lists.managed_lists.iter_mut().chain(lists.custom_lists.iter_mut());
                for item in items.filter(|i| i.configuration_id == configuration_id) {
                    item.is_enabled = enabled;
                    item.action = action;
                }
            })
            .await;
    }

    /// The CDN summary of a Pull Zone over `window` at `now_ms`, advanced by at most
    /// `pages` logging requests from where the previous poll stopped, at most once per
    /// [`CDN_SUMMARY_TTL`] per credential: the watches of one Pull Zone share its
    /// logging quota and its tail.
    pub async fn cdn_summary(
        &self,
        client: &EdgeClient,
        pull_zone_id: i64,
        (window, span): (&str, Duration),
        pages: u32,
        now_ms: i64,
    ) -> Result<TailSummary, ApiError> {
        let key = (credential_id(client), pull_zone_id, window.to_string());
        let summarise = || async {
            let mut tail = self
                .take_tail(&key, now_ms)
                .unwrap_or_else(|| CdnTail::new(span, now_ms));
            let advanced = advance(&mut tail, now_ms, pages, |query| async move {
                client.query_logs(pull_zone_id, &query).await
            })
            .await;
            let summary = tail.summary(pull_zone_id, window, now_ms);
            self.put_tail(key.clone(), now_ms, tail);
            advanced.map(|()| summary)
        };
        self.cdn_summaries.get_or_read(key.clone(), summarise).await
    }

    fn take_tail(&self, key: &CdnKey, now_ms: i64) -> Option<CdnTail> {
        let mut tails = self.cdn_tails.lock().unwrap_or_else(PoisonError::into_inner);
        tails.retain(|_, (used_ms, tail)| {
            now_ms.saturating_sub(*used_ms) < (tail.window() + CDN_TAIL_IDLE).as_millis() as i64
        });
        tails.remove(key).map(|(_, tail)| tail)
    }

    fn put_tail(&self, key: CdnKey, now_ms: i64, tail: CdnTail) {
        let mut tails = self.cdn_tails.lock().unwrap_or_else(PoisonError::into_inner);
        tails.insert(key, (now_ms, tail));
    }
}
