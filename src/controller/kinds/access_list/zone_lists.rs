//! One read of a Shield Zone's access lists serves every AccessListConfig of that zone
//! and credential, within a few seconds or since the zone's last resync instant.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::vocabulary::AccessListError;
use crate::api::EdgeClient;
use crate::api::models::shield::AccessListsResponse;
use crate::controller::framework::credentials::credential_id;
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::shared_reads::SharedReads;

/// How long one read of a zone's access lists serves the reconciles of that zone (a
/// burst of creates shares it; resyncs of a zone happen at one instant anyway).
pub const ZONE_LISTS_TTL: Duration = Duration::from_secs(5);

/// How recent a read of a zone's access lists a reconcile needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListsFreshness {
    /// A read begun now (or after): to confirm what an older read showed.
    Fresh,
    /// A spec to apply: a read of the last few seconds.
    Recent,
    /// An object converged to its spec (a restart, a touch): any read since the zone's
    /// last resync instant, this long ago, so a restarted operator reads each zone
    /// once however many objects it has. The resync instants read anew.
    SinceResync(Duration),
}

/// (credential identity, Shield Zone id).
type ZoneKey = (String, i64);

/// The zones' access lists, shared (not copied) by the reconciles of a zone: a zone
/// may hold hundreds of lists, kept with their typed members only.
pub struct ZoneLists {
    reads: SharedReads<ZoneKey, Arc<AccessListsResponse>>,
}

impl Default for ZoneLists {
    fn default() -> Self {
        Self {
            reads: SharedReads::new(ZONE_LISTS_TTL),
        }
    }
}

impl ZoneLists {
    /// The zone's access lists, read at most once per [`ZONE_LISTS_TTL`] per credential
    /// (concurrent reconciles of one zone share a single read), or, for an object
    /// already converged, once since the zone's last resync instant.
    pub async fn read(
        &self,
        client: &EdgeClient,
        zone: i64,
        freshness: ListsFreshness,
    ) -> Result<Arc<AccessListsResponse>, ReconcileError<AccessListError>> {
        let now = Instant::now();
        let recent = now.checked_sub(ZONE_LISTS_TTL);
        let not_before = match freshness {
            ListsFreshness::Fresh => Some(now),
            ListsFreshness::Recent => recent,
            ListsFreshness::SinceResync(since) => recent.zip(now.checked_sub(since)).map(|(a, b)| a.min(b)),
        };
        let lists = self
            .reads
            .get_or_read_since((credential_id(client), zone), not_before, || async {
                client
                    .access_lists(zone)
                    .await
                    .map(|lists| Arc::new(lists.typed_only()))
            })
            .await?;
        Ok(lists)
    }

    /// Records a write in the kept zone lists, so later reconciles see it.
    pub async fn note_write(&self, client: &EdgeClient, zone: i64, configuration_id: i64, enabled: bool, action: i32) {
        let key = (credential_id(client), zone);
        self.reads
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
}
