//! One read of a Shield Zone's access lists serves every AccessListConfig of that zone
//! and credential, within a few seconds or since the zone's last resync instant.
//!
//! How old a read a reconcile may show: one begun at most [`ZONE_LISTS_TTL`] before it,
//! or, for an object converged to its spec, since the zone's last resync instant (less
//! than one poll interval before it). A write through the operator to a zone's lists is
//! in every read of that zone asked for after it: the writer's kept read takes it on, and
//! every other credential's kept read of the zone (the writer's too when the write
//! failed: it may have landed) is not served again, so their next read starts after the
//! write.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::api::models::shield::{AccessListConfiguration, AccessListConfigurationPatch, AccessListsResponse};
use crate::api::shared_reads::SharedReads;
use crate::api::{ApiError, EdgeClient};
use crate::controller::framework::prelude::Failure;
use crate::controller::kinds::access_list::resource::AccessListConfig;

/// How long one read of a zone's access lists serves the reconciles of that zone (a
/// burst of creates shares it; resyncs of a zone happen at one instant anyway).
pub const ZONE_LISTS_TTL: Duration = Duration::from_secs(5);

/// How recent a read of a zone's access lists a reconcile needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListsFreshness {
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
    pub(crate) async fn read(
        &self,
        client: &EdgeClient,
        zone: i64,
        freshness: ListsFreshness,
    ) -> Result<Arc<AccessListsResponse>, Failure<AccessListConfig>> {
        let now = Instant::now();
        let recent = now.checked_sub(ZONE_LISTS_TTL);
        let not_before = match freshness {
            ListsFreshness::Fresh => Some(now),
            ListsFreshness::Recent => recent,
            ListsFreshness::SinceResync(since) => recent.zip(now.checked_sub(since)).map(|(a, b)| a.min(b)),
        };
        let lists = self
            .reads
            .get_or_read_since((client.credential_id(), zone), not_before, || async {
                client
                    .access_lists(zone)
                    .await
                    .map(|lists| Arc::new(lists.typed_only()))
            })
            .await?;
        Ok(lists)
    }

    /// PATCHes `configuration_id` of `zone` with `client`, and answers the configuration
    /// as written (what the platform reported, or else what was asked for). Every read of
    /// the zone asked for afterwards shows the write: answered, it is applied to this
    /// credential's kept lists, and other credentials' kept reads of the zone are not
    /// served again; failed (it may have landed), no kept read of the zone is.
    pub async fn write(
        &self,
        client: &EdgeClient,
        zone: i64,
        configuration_id: i64,
        patch: &AccessListConfigurationPatch,
    ) -> Result<AccessListConfiguration, ApiError> {
        let answer = client.update_access_list(zone, configuration_id, patch).await;
        let writer = client.credential_id();
        let answered_at = Instant::now();
        let written = match answer {
            Ok(written) => written.or_requested(patch),
            Err(error) => {
                self.reads.outdate(|(_, z)| *z == zone, answered_at).await;
                return Err(error);
            }
        };
        self.reads
            .outdate(|(credential, z)| *z == zone && *credential != writer, answered_at)
            .await;
        self.reads
            .update(&(writer, zone), |lists| {
                let lists = Arc::make_mut(lists);
                let items = lists.managed_lists.iter_mut().chain(lists.custom_lists.iter_mut());
                for item in items.filter(|i| i.configuration_id == configuration_id) {
                    item.is_enabled = written.is_enabled.unwrap_or(item.is_enabled);
                    item.action = written.action.unwrap_or(item.action);
                }
            })
            .await;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ClientConfig, Credentials, SecretValue};
    use crate::sim::{RunningSim, SimDocument};

    const ZONE: i64 = 1001;
    const CONFIGURATION: i64 = 9101;
    const SINCE_LONG_AGO: ListsFreshness = ListsFreshness::SinceResync(Duration::from_secs(3600));

    /// edge-sim with the example fixtures (9101 of zone 1001 disabled), a client for
    /// each of two keys it accepts, and the zone's lists read once with each key.
    async fn read_with_two_keys() -> (RunningSim, ZoneLists, EdgeClient, EdgeClient) {
        let mut document = SimDocument::from_yaml(include_str!("../../../../examples/edge-sim-fixtures.yaml"))
            .unwrap_or_else(|e| panic!("fixtures: {e}"));
        document.access_keys = vec!["writer-key".into(), "observer-key".into()];
        let sim = crate::sim::spawn(document)
            .await
            .unwrap_or_else(|e| panic!("edge-sim: {e}"));
        let client = |key: &str| {
            let config = ClientConfig::new(
                sim.base_url(),
                sim.base_url(),
                Credentials::AccessKey(SecretValue::new(key)),
            );
            EdgeClient::new(config).unwrap_or_else(|e| panic!("{e}"))
        };
        let (writer, observer) = (client("writer-key"), client("observer-key"));
        let lists = ZoneLists::default();
        assert!(!enabled(&lists, &writer, ListsFreshness::Recent).await);
        assert!(!enabled(&lists, &observer, SINCE_LONG_AGO).await);
        assert_eq!(platform_reads(&sim), 2);
        (sim, lists, writer, observer)
    }

    /// How many times the platform was asked for the zone's lists.
    fn platform_reads(sim: &RunningSim) -> usize {
        let journal = sim.sim.journal();
        journal
            .iter()
            .filter(|e| e.method == "GET" && e.path.ends_with("/access-lists"))
            .count()
    }

    /// Whether configuration 9101 is enabled in the lists `client` is served.
    async fn enabled(lists: &ZoneLists, client: &EdgeClient, freshness: ListsFreshness) -> bool {
        let read = lists
            .read(client, ZONE, freshness)
            .await
            .unwrap_or_else(|e| panic!("read: {e}"));
        let item = read.all_lists().find(|i| i.configuration_id == CONFIGURATION);
        item.unwrap_or_else(|| panic!("9101 in {read:?}")).is_enabled
    }

    fn enable() -> AccessListConfigurationPatch {
        AccessListConfigurationPatch {
            is_enabled: Some(true),
            action: None,
        }
    }

    #[tokio::test]
    async fn a_write_is_in_the_next_read_of_every_credential_of_the_zone() {
        let (sim, lists, writer, observer) = read_with_two_keys().await;
        let written = lists.write(&writer, ZONE, CONFIGURATION, &enable()).await;
        assert_eq!(written.map(|w| w.is_enabled).ok(), Some(Some(true)));
        assert!(
            enabled(&lists, &observer, SINCE_LONG_AGO).await,
            "the observer's kept read predates the write: read anew"
        );
        assert_eq!(platform_reads(&sim), 3);
        assert!(
            enabled(&lists, &writer, ListsFreshness::Recent).await,
            "the writer's kept read took the write on"
        );
        assert!(enabled(&lists, &observer, SINCE_LONG_AGO).await);
        assert_eq!(platform_reads(&sim), 3, "both served from what they keep");
    }

    #[tokio::test]
    async fn a_failed_write_may_have_landed_so_no_kept_read_of_its_zone_is_served() {
        let (sim, lists, writer, observer) = read_with_two_keys().await;
        let refused = lists.write(&writer, ZONE, 999_999, &enable()).await;
        assert!(refused.is_err(), "{refused:?}");
        assert!(!enabled(&lists, &writer, ListsFreshness::Recent).await);
        assert!(!enabled(&lists, &observer, SINCE_LONG_AGO).await);
        assert_eq!(platform_reads(&sim), 4, "both read anew");
    }
}
