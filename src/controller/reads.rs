//! Platform reads shared between objects: one read of a Shield Zone's access lists
//! serves every AccessListConfig of that zone, one CDN summary every watch of the same
//! Pull Zone and window.

use std::time::Duration;

use super::credentials::credential_id;
use super::error::ReconcileError;
use super::shared_reads::SharedReads;
use crate::api::models::shield::AccessListsResponse;
use crate::api::{ApiError, EdgeClient};
use crate::crd::container_app_watch::CdnSummary;

/// How long one read of a zone's access lists serves the reconciles of that zone (a
/// burst of creates shares it; resyncs of a zone happen at one instant anyway).
const ZONE_LISTS_TTL: Duration = Duration::from_secs(5);
/// How long one CDN summary serves the watches of the same Pull Zone and window: less
/// than the shortest poll interval (10 s), so each poll sees fresh logs.
const CDN_SUMMARY_TTL: Duration = Duration::from_secs(5);

/// (credential identity, Shield Zone id).
type ZoneKey = (String, i64);
/// (credential identity, Pull Zone id, window).
type CdnKey = (String, i64, String);

pub struct Reads {
    zone_lists: SharedReads<ZoneKey, AccessListsResponse, ApiError>,
    cdn_summaries: SharedReads<CdnKey, CdnSummary, ApiError>,
}

impl Default for Reads {
    fn default() -> Self {
        Self {
            zone_lists: SharedReads::new(ZONE_LISTS_TTL),
            cdn_summaries: SharedReads::new(CDN_SUMMARY_TTL),
        }
    }
}

impl Reads {
    /// The zone's access lists, read at most once per [`ZONE_LISTS_TTL`] per credential:
    /// concurrent reconciles of one zone share a single read.
    pub async fn zone_access_lists(
        &self,
        client: &EdgeClient,
        zone: i64,
    ) -> Result<AccessListsResponse, ReconcileError> {
        let lists = self
            .zone_lists
            .get_or_read((credential_id(client), zone), || client.access_lists(zone))
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
                let items = lists.managed_lists.iter_mut().chain(lists.custom_lists.iter_mut());
                for item in items.filter(|i| i.configuration_id == configuration_id) {
                    item.is_enabled = enabled;
                    item.action = action;
                }
            })
            .await;
    }

    /// The CDN summary of a Pull Zone over `window`, made by `summarise` at most once
    /// per [`CDN_SUMMARY_TTL`] per credential: the watches of one Pull Zone share its
    /// logging quota instead of each paging through the same logs.
    pub async fn cdn_summary<Fut>(
        &self,
        client: &EdgeClient,
        pull_zone_id: i64,
        window: &str,
        summarise: impl FnOnce() -> Fut,
    ) -> Result<CdnSummary, ApiError>
    where
        Fut: Future<Output = Result<CdnSummary, ApiError>>,
    {
        let key = (credential_id(client), pull_zone_id, window.to_string());
        self.cdn_summaries.get_or_read(key, summarise).await
    }
}
