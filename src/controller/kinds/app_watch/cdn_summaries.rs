//! One CDN summary serves every ContainerAppWatch of the same Pull Zone, window and
//! credential within a few seconds; the tails it advances are kept between polls.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::cdn_tail::{CdnTail, TailSummary, advance};
use crate::api::{ApiError, EdgeClient};
use crate::controller::framework::credentials::credential_id;
use crate::controller::framework::shared_reads::SharedReads;

/// How long one CDN summary serves the watches of the same Pull Zone and window: less
/// than the shortest poll interval (10 s), so each poll sees fresh logs.
const CDN_SUMMARY_TTL: Duration = Duration::from_secs(5);

/// (credential identity, Pull Zone id, window).
type CdnKey = (String, i64, String);

/// A tail is dropped when no poll used it for its window and this long: by then it
/// holds nothing of the window.
const CDN_TAIL_IDLE: Duration = Duration::from_secs(600);

pub struct CdnSummaries {
    summaries: SharedReads<CdnKey, TailSummary>,
    /// Tails between polls, with when each was last used (Unix ms). A poll takes its
    /// tail out while it reads, so no lock is held across a request.
    tails: Mutex<HashMap<CdnKey, (i64, CdnTail)>>,
}

impl Default for CdnSummaries {
    fn default() -> Self {
        Self {
            summaries: SharedReads::new(CDN_SUMMARY_TTL),
            tails: Mutex::default(),
        }
    }
}

impl CdnSummaries {
    /// The CDN summary of a Pull Zone over `window` at `now_ms`, advanced by at most
    /// `pages` logging requests from where the previous poll stopped, at most once per
    /// [`CDN_SUMMARY_TTL`] per credential: the watches of one Pull Zone share its
    /// logging quota and its tail.
    pub async fn summary(
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
        self.summaries.get_or_read(key.clone(), summarise).await
    }

    fn take_tail(&self, key: &CdnKey, now_ms: i64) -> Option<CdnTail> {
        let mut tails = self.tails.lock().unwrap_or_else(PoisonError::into_inner);
        tails.retain(|_, (used_ms, tail)| {
            now_ms.saturating_sub(*used_ms) < (tail.window() + CDN_TAIL_IDLE).as_millis() as i64
        });
        tails.remove(key).map(|(_, tail)| tail)
    }

    fn put_tail(&self, key: CdnKey, now_ms: i64, tail: CdnTail) {
        let mut tails = self.tails.lock().unwrap_or_else(PoisonError::into_inner);
        tails.insert(key, (now_ms, tail));
    }
}
