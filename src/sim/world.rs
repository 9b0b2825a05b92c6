//! The live world built from the fixtures document: its reads and changes, and the
//! searchable events and CDN logs beside it.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::document::{Certificate, Challenge, Hostname, PullZone, Resource, ShieldZone, SimDocument};
use super::events::EventStore;
use super::logs::PullZoneLogs;

/// Security events one Shield Zone holds (about 125 bytes each).
pub(crate) const MAX_EVENTS_PER_ZONE: usize = 5_000_000;
/// CDN log entries one Pull Zone holds within the retention.
pub(crate) const MAX_LOGS_PER_PULL_ZONE: usize = 2_000_000;

/// Why the world refused a change or a read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    #[error("Shield Zone {0} was not found")]
    ShieldZoneNotFound(i64),
    #[error("access list configuration {configuration} was not found in Shield Zone {zone}")]
    ConfigurationNotFound { zone: i64, configuration: i64 },
    #[error("the hostname {0} is not registered on any Pull Zone")]
    HostnameNotFound(String),
    #[error("the HTTP-01 challenge for {0} could not be validated yet")]
    ChallengePending(String),
}

/// One page (1-based) of a zone's rate-limit rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: i64,
    pub total_pages: i64,
}

impl<T: Clone> Page<T> {
    /// Page `page` (1-based) of `per_page` of `all`; past the end, an empty page.
    pub fn of(all: &[T], page: i64, per_page: i64) -> Self {
        let per_page = per_page.max(1);
        let total = all.len() as i64;
        let skip = usize::try_from(page.saturating_sub(1).saturating_mul(per_page)).unwrap_or(usize::MAX);
        Page {
            items: all
                .iter()
                .skip(skip)
                .take(usize::try_from(per_page).unwrap_or(usize::MAX))
                .cloned()
                .collect(),
            total,
            total_pages: (total + per_page - 1) / per_page,
        }
    }
}

/// The access lists of a zone, as the platform splits them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ZoneAccessLists {
    pub managed: Vec<Map<String, Value>>,
    pub custom: Vec<Map<String, Value>>,
    pub custom_entry_count: i64,
}

/// The live state: the document plus the searchable events and CDN logs.
///
/// Event stores and log sets are shared snapshots: a search clones the `Arc` and runs
/// without the world's lock, and a change copies a store only while a search still
/// reads it.
#[derive(Debug, Default)]
pub struct World {
    pub document: SimDocument,
    events: HashMap<i64, Arc<EventStore>>,
    logs: HashMap<i64, Arc<PullZoneLogs>>,
}

impl World {
    pub fn new(document: SimDocument) -> Self {
        Self {
            document,
            ..Self::default()
        }
    }

    /// The account of `key`, if it is a known key.
    pub fn account_of(&self, key: &str) -> Option<Arc<str>> {
        self.document.account_of(key).map(Arc::from)
    }

    /// Whether `account` sees `resource` (resources of other accounts answer as missing
    /// ones do). A hostname belongs to the account of its Pull Zone.
    pub fn sees(&self, account: &str, resource: &Resource) -> bool {
        self.document.owner_of(resource) == account
    }

    /// Whether `account` sees the Pull Zone that holds `hostname` (false when none does).
    pub fn sees_hostname(&self, account: &str, hostname: &str) -> bool {
        self.document
            .pull_zones
            .iter()
            .find(|z| z.hostnames.iter().any(|h| h.hostname.eq_ignore_ascii_case(hostname)))
            .is_some_and(|zone| self.sees(account, &Resource::PullZone(zone.id)))
    }

    /// A snapshot of a Pull Zone's logs (empty for a Pull Zone without any).
    pub fn pull_zone_logs(&self, id: i64) -> Arc<PullZoneLogs> {
        self.logs.get(&id).cloned().unwrap_or_default()
    }

    /// A Pull Zone's logs, to change.
    pub fn pull_zone_logs_mut(&mut self, id: i64) -> &mut PullZoneLogs {
        Arc::make_mut(self.logs.entry(id).or_default())
    }

    /// A snapshot of a Shield Zone's events (empty for a zone without any).
    pub fn shield_zone_events(&self, id: i64) -> Arc<EventStore> {
        self.events.get(&id).cloned().unwrap_or_default()
    }

    /// A Shield Zone's events, to change.
    pub fn shield_zone_events_mut(&mut self, id: i64) -> &mut EventStore {
        Arc::make_mut(self.events.entry(id).or_default())
    }

    pub fn shield_zone(&self, id: i64) -> Option<&ShieldZone> {
        self.document.shield_zones.iter().find(|z| z.id == id)
    }

    pub fn shield_zone_mut(&mut self, id: i64) -> Option<&mut ShieldZone> {
        self.document.shield_zones.iter_mut().find(|z| z.id == id)
    }

    pub fn pull_zone(&self, id: i64) -> Option<&PullZone> {
        self.document.pull_zones.iter().find(|z| z.id == id)
    }

    pub fn pull_zone_mut(&mut self, id: i64) -> Option<&mut PullZone> {
        self.document.pull_zones.iter_mut().find(|z| z.id == id)
    }

    pub fn app(&self, id: &str) -> Option<&Value> {
        self.document.apps.iter().find(|app| has_id(app, id))
    }

    pub fn app_mut(&mut self, id: &str) -> Option<&mut Value> {
        self.document.apps.iter_mut().find(|app| has_id(app, id))
    }

    /// The zone's access lists, managed and custom.
    pub fn access_lists(&self, zone: i64) -> Result<ZoneAccessLists, WorldError> {
        let zone = self.shield_zone(zone).ok_or(WorldError::ShieldZoneNotFound(zone))?;
        let mut lists = ZoneAccessLists::default();
        for list in &zone.access_lists {
            if list.managed {
                lists.managed.push(list.details.clone());
            } else {
                lists.custom_entry_count += list.entry_count();
                lists.custom.push(list.details.clone());
            }
        }
        Ok(lists)
    }

    /// Applies a configuration PATCH (a `None` keeps the value) and returns
    /// `(isEnabled, action)` as they are now.
    pub fn update_access_list(
        &mut self,
        zone: i64,
        configuration: i64,
        is_enabled: Option<bool>,
        action: Option<i64>,
    ) -> Result<(bool, i64), WorldError> {
        let zone_state = self.shield_zone_mut(zone).ok_or(WorldError::ShieldZoneNotFound(zone))?;
        let list = zone_state
            .access_lists
            .iter_mut()
            .find(|l| l.configuration_id() == Some(configuration))
            .ok_or(WorldError::ConfigurationNotFound { zone, configuration })?;
        if let Some(enabled) = is_enabled {
            list.set_enabled(enabled);
        }
        if let Some(action) = action {
            list.set_action(action);
        }
        Ok((list.is_enabled(), list.action()))
    }

    /// The Shield Zone that names `pull_zone` as its Pull Zone.
    pub fn shield_zone_of_pull_zone(&self, pull_zone: i64) -> Option<i64> {
        self.document
            .shield_zones
            .iter()
            .find(|zone| zone.pull_zone_id == Some(pull_zone))
            .map(|zone| zone.id)
    }

    /// Page `page` (1-based) of `per_page` rules; past the end, an empty page.
    pub fn rate_limit_page(&self, zone: i64, page: i64, per_page: i64) -> Result<Page<Value>, WorldError> {
        let zone = self.shield_zone(zone).ok_or(WorldError::ShieldZoneNotFound(zone))?;
        Ok(Page::of(&zone.rate_limits, page, per_page))
    }

    /// Page `page` (1-based) of `per_page` of the configurations of the Shield Zones
    /// `account` sees, by id.
    pub fn shield_zone_page(&self, account: &str, page: i64, per_page: i64) -> Page<Value> {
        let mut visible: Vec<&ShieldZone> = self
            .document
            .shield_zones
            .iter()
            .filter(|zone| self.sees(account, &Resource::ShieldZone(zone.id)))
            .collect();
        visible.sort_by_key(|zone| zone.id);
        let shown = Page::of(&visible, page, per_page);
        Page {
            items: shown.items.into_iter().map(ShieldZone::configuration).collect(),
            total: shown.total,
            total_pages: shown.total_pages,
        }
    }

    /// Issues the certificate of `hostname` once its challenge is ready.
    pub fn complete_certificate(&mut self, hostname: &str) -> Result<(), WorldError> {
        let entry = self
            .hostname_mut(hostname)
            .ok_or_else(|| WorldError::HostnameNotFound(hostname.to_string()))?;
        match entry.challenge {
            Challenge::Pending => Err(WorldError::ChallengePending(hostname.to_string())),
            Challenge::Ready => {
                entry.certificate = Some(Certificate::Issued);
                Ok(())
            }
        }
    }

    pub fn hostname_mut(&mut self, hostname: &str) -> Option<&mut Hostname> {
        self.document
            .pull_zones
            .iter_mut()
            .flat_map(|z| z.hostnames.iter_mut())
            .find(|h| h.hostname.eq_ignore_ascii_case(hostname))
    }
}

fn has_id(app: &serde_json::Value, id: &str) -> bool {
    app.get("id").and_then(|v| v.as_str()) == Some(id)
}
