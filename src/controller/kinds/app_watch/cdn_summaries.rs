//! One CDN summary serves every ContainerAppWatch of the same Pull Zone, window span and
//! credential within a few seconds; the tails it advances are kept between polls.
//!
//! What the watches of one credential may spend of a Pull Zone's logging budget (30
//! requests in 10 s, shared by every credential) is bounded: windows are keyed by their
//! span, not their spelling (`1h`, `60m` and `3600s` share one tail); a credential the
//! platform refused for a zone makes no request for that zone until [`REFUSAL_HOLD`]
//! has passed, whatever its watches' windows; a tail is kept only once a read
//! succeeded, and a credential keeps at most [`TAILS_PER_ZONE`] windows of a zone.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::cdn_tail::{CdnTail, TailSummary, advance, window_span};
use crate::api::ApiError;
use crate::api::LogQuery;
use crate::api::models::logging::LogsResponse;
use crate::api::shared_reads::SharedReads;

/// How long one CDN summary serves the watches of the same Pull Zone and window: less
/// than the shortest poll interval (10 s), so each poll sees fresh logs.
const CDN_SUMMARY_TTL: Duration = Duration::from_secs(5);

/// (credential identity, Pull Zone id): whose budget of which zone.
type ZoneKey = (String, i64);

/// (credential identity, Pull Zone id, window span in ms).
type CdnKey = (String, i64, u64);

/// A tail is dropped when no poll used it for its window and this long: by then it
/// holds nothing of the window.
const CDN_TAIL_IDLE: Duration = Duration::from_secs(600);

/// The windows of one Pull Zone a credential keeps tails of; a further one replaces the
/// one used least recently.
const TAILS_PER_ZONE: usize = 4;

/// How long a refusal of a Pull Zone's logs to a credential (401, 403, 404: answers
/// the platform repeats) holds back every read of that zone with that credential.
pub(super) const REFUSAL_HOLD: Duration = Duration::from_secs(60);

/// Refusals kept at most; past it, the ones whose hold ended go first, then the oldest.
const MOST_REFUSALS: usize = 4096;

pub struct CdnSummaries {
    summaries: SharedReads<CdnKey, TailSummary>,
    /// Tails between polls, with when each was last used (Unix ms). A poll takes its
    /// tail out while it reads, so no lock is held across a request.
    tails: Mutex<HashMap<CdnKey, (i64, CdnTail)>>,
    /// Refusals by zone and credential, with when their hold ends (Unix ms).
    refusals: Mutex<HashMap<ZoneKey, (i64, ApiError)>>,
}

impl Default for CdnSummaries {
    fn default() -> Self {
        Self {
            summaries: SharedReads::new(CDN_SUMMARY_TTL),
            tails: Mutex::default(),
            refusals: Mutex::default(),
        }
    }
}

impl CdnSummaries {
    /// The CDN summary of a Pull Zone over `window` (as spelled, and its span) at
    /// `now_ms`, for the credential `credential`, advanced by at most `pages` calls of
    /// `fetch` from where the previous poll stopped, at most once per
    /// [`CDN_SUMMARY_TTL`] per credential and span: the watches of one Pull Zone share
    /// its logging quota and its tail.
    pub async fn summary<Fut>(
        &self,
        (credential, pull_zone_id): (String, i64),
        (window, span): (&str, Duration),
        pages: u32,
        now_ms: i64,
        fetch: impl FnMut(LogQuery) -> Fut,
    ) -> Result<TailSummary, ApiError>
    where
        Fut: Future<Output = Result<LogsResponse, ApiError>>,
    {
        let zone = (credential, pull_zone_id);
        if let Some(refusal) = self.refused(&zone, now_ms) {
            return Err(refusal);
        }
        let span = window_span(span);
        let key = (zone.0.clone(), pull_zone_id, span.as_millis() as u64);
        let summarise = || async {
            let kept = self.take_tail(&key, now_ms);
            let read_before = kept.is_some();
            let mut tail = kept.unwrap_or_else(|| CdnTail::new(span, now_ms));
            let advanced = advance(&mut tail, now_ms, pages, fetch).await;
            let summary = tail.summary(pull_zone_id, window, now_ms);
            if read_before || advanced.is_ok() {
                self.put_tail(key.clone(), now_ms, tail);
            }
            advanced.map(|()| summary)
        };
        let answer = self.summaries.get_or_read(key.clone(), summarise).await;
        match answer {
            Ok(mut summary) => {
                // Shared by every spelling of the span: each watch reads its own.
                summary.summary.window = window.to_string();
                Ok(summary)
            }
            Err(error) => {
                if matches!(error.status(), Some(401 | 403 | 404)) {
                    self.refuse(zone, now_ms, &error);
                }
                Err(error)
            }
        }
    }

    fn refused(&self, zone: &ZoneKey, now_ms: i64) -> Option<ApiError> {
        let refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        refusals
            .get(zone)
            .filter(|(until_ms, _)| now_ms < *until_ms)
            .map(|(_, error)| error.clone())
    }

    fn refuse(&self, zone: ZoneKey, now_ms: i64, error: &ApiError) {
        let mut refusals = self.refusals.lock().unwrap_or_else(PoisonError::into_inner);
        if refusals.len() >= MOST_REFUSALS {
            refusals.retain(|_, (until_ms, _)| now_ms < *until_ms);
        }
        if refusals.len() >= MOST_REFUSALS
            && let Some(oldest) = refusals
                .iter()
                .min_by_key(|(_, (until_ms, _))| *until_ms)
                .map(|(k, _)| k.clone())
        {
            refusals.remove(&oldest);
        }
        let until_ms = now_ms.saturating_add(REFUSAL_HOLD.as_millis() as i64);
        refusals.insert(zone, (until_ms, error.clone()));
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
        let same_zone = |other: &CdnKey| other.0 == key.0 && other.1 == key.1;
        while tails.keys().filter(|other| same_zone(other)).count() >= TAILS_PER_ZONE {
            let Some(least_recent) = tails
                .iter()
                .filter(|(other, _)| same_zone(other))
                .min_by_key(|(_, (used_ms, _))| *used_ms)
                .map(|(other, _)| other.clone())
            else {
                break;
            };
            tails.remove(&least_recent);
        }
        tails.insert(key, (now_ms, tail));
    }

    /// How many tails are kept.
    #[cfg(test)]
    fn tails(&self) -> usize {
        self.tails.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::api::PlatformMessage;

    const NOW: i64 = 1_795_176_000_000;

    fn empty_page() -> Result<LogsResponse, ApiError> {
        Ok(serde_json::from_value(serde_json::json!({
            "data": [], "pagination": {"offset": 0, "limit": 100, "returned": 0, "hasMore": false},
            "query": {"pullZoneId": 7, "from": "2026-11-20T11:00:00Z", "to": "2026-11-20T12:00:00Z", "order": "desc"}
        }))
        .expect("an empty page"))
    }

    fn forbidden() -> ApiError {
        ApiError::Forbidden(PlatformMessage {
            message: "no access to Pull Zone 7".into(),
            field: None,
            error_key: None,
        })
    }

    async fn poll(
        summaries: &CdnSummaries,
        credential: &str,
        window: (&str, Duration),
        now_ms: i64,
        calls: &AtomicUsize,
        answer: fn() -> Result<LogsResponse, ApiError>,
    ) -> Result<TailSummary, ApiError> {
        summaries
            .summary((credential.to_string(), 7), window, 10, now_ms, |_| async {
                calls.fetch_add(1, Ordering::SeqCst);
                answer()
            })
            .await
    }

    #[tokio::test]
    async fn spellings_of_one_span_share_a_tail_and_each_reads_its_own_window() {
        let summaries = CdnSummaries::default();
        let calls = AtomicUsize::new(0);
        let hour = Duration::from_secs(3600);
        let first = poll(&summaries, "a", ("1h", hour), NOW, &calls, empty_page).await;
        let again = poll(&summaries, "a", ("60m", hour), NOW, &calls, empty_page).await;
        let third = poll(&summaries, "a", ("3600s", hour), NOW, &calls, empty_page).await;
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one read serves the three spellings");
        assert_eq!(summaries.tails(), 1);
        let windows: Vec<String> = [first, again, third]
            .into_iter()
            .map(|summary| summary.map(|s| s.summary.window).unwrap_or_default())
            .collect();
        assert_eq!(windows, ["1h", "60m", "3600s"]);
    }

    #[tokio::test]
    async fn a_refused_credential_reads_a_zone_once_per_hold_whatever_its_windows() {
        let summaries = CdnSummaries::default();
        let calls = AtomicUsize::new(0);
        for seconds in 1..=50 {
            let window = format!("{seconds}s");
            let answer = poll(
                &summaries,
                "refused",
                (&window, Duration::from_secs(seconds)),
                NOW + seconds as i64 * 1000,
                &calls,
                || Err(forbidden()),
            )
            .await;
            assert!(matches!(answer, Err(ApiError::Forbidden(_))), "{seconds}: {answer:?}");
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one request in the hold");
        assert_eq!(summaries.tails(), 0, "a failing read keeps no tail");
        // The refusal was answered at the first poll, a second after NOW.
        let after_hold = NOW + 1_000 + REFUSAL_HOLD.as_millis() as i64;
        let hour = Duration::from_secs(3600);
        let _ = poll(&summaries, "refused", ("1h", hour), after_hold, &calls, || {
            Err(forbidden())
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 2, "asked again once the hold ended");
        let other = poll(&summaries, "allowed", ("1h", hour), NOW, &calls, empty_page).await;
        assert!(other.is_ok(), "another credential of the zone is not held back");
    }

    #[tokio::test]
    async fn a_credential_keeps_a_bounded_number_of_windows_per_zone() {
        let summaries = CdnSummaries::default();
        let calls = AtomicUsize::new(0);
        for minutes in 1..=20u64 {
            let window = format!("{minutes}m");
            let span = Duration::from_secs(minutes * 60);
            let now_ms = NOW + minutes as i64 * 10_000;
            assert!(
                poll(&summaries, "a", (&window, span), now_ms, &calls, empty_page)
                    .await
                    .is_ok()
            );
        }
        assert_eq!(summaries.tails(), TAILS_PER_ZONE);
    }
}
