//! Requests an access list acts on, and the security events the platform records for
//! them: `feature` `access_list`, `ruleId` the list's `listId`, and `action` what its
//! configuration does now (`logged` under Log, `blocked` under Block, `challenged`
//! under Challenge); a disabled list, Allow, Bypass and None record nothing.

use serde::Deserialize;

use super::document::SimAccessList;
use super::events::EventInput;

/// The most requests one call may send.
pub(crate) const MAX_REQUESTS: u64 = 100_000;

/// Requests from one client that an access list matches.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListTraffic {
    /// The list that matches them, by its `listId`.
    pub list_id: i64,
    pub ip: String,
    #[serde(default)]
    pub country: String,
    #[serde(default)]
    pub asn: String,
    #[serde(default = "root")]
    pub url: String,
    #[serde(default)]
    pub ua: String,
    /// When, in Unix milliseconds; the emulator's clock when absent.
    #[serde(default)]
    pub at: Option<i64>,
    /// How many requests.
    #[serde(default = "one")]
    pub count: u64,
}

fn root() -> String {
    "/".into()
}

fn one() -> u64 {
    1
}

/// The event `action` of a list's configuration, or `None` when it records none.
fn recorded_action(list: &SimAccessList) -> Option<&'static str> {
    if !list.is_enabled() {
        return None;
    }
    match list.action() {
        2 => Some("blocked"),
        3 => Some("challenged"),
        4 => Some("logged"),
        _ => None,
    }
}

/// The events `traffic` records on `lists` (a Shield Zone's) at `now_ms`, lazily; the
/// list named must be one of them.
pub(crate) fn events<'a>(
    lists: &'a [SimAccessList],
    traffic: &'a [ListTraffic],
    now_ms: i64,
) -> Result<impl Iterator<Item = EventInput> + 'a, String> {
    let mut actions = Vec::with_capacity(traffic.len());
    for (index, requests) in traffic.iter().enumerate() {
        let list = lists
            .iter()
            .find(|list| list.list_id() == Some(requests.list_id))
            .ok_or_else(|| {
                format!(
                    "traffic[{index}].listId: the zone has no access list {}",
                    requests.list_id
                )
            })?;
        actions.push(recorded_action(list));
    }
    Ok(traffic.iter().zip(actions).flat_map(move |(requests, action)| {
        let count = if action.is_some() { requests.count } else { 0 };
        (0..count).map(move |_| EventInput {
            log_id: None,
            timestamp: requests.at.unwrap_or(now_ms),
            feature: "access_list".into(),
            rule_id: requests.list_id.to_string(),
            ip: requests.ip.clone(),
            ja4: String::new(),
            ua: requests.ua.clone(),
            url: requests.url.clone(),
            asn: requests.asn.clone(),
            country: requests.country.clone(),
            action: action.unwrap_or_default().into(),
            rule_name: format!("Access list {}", requests.list_id),
            log: None,
        })
    }))
}

/// A generated event as the zone's lists record it: an `access_list` event is one of a
/// list that records (chosen by its rule), with that list's `ruleId` and action; with
/// no such list in the zone it is a `waf` event.
pub(crate) fn as_the_lists_record(lists: &[SimAccessList], mut event: EventInput) -> EventInput {
    if event.feature != "access_list" {
        return event;
    }
    let recording: Vec<(i64, &'static str)> = lists
        .iter()
        .filter_map(|list| Some((list.list_id()?, recorded_action(list)?)))
        .collect();
    let rule = event
        .rule_id
        .bytes()
        .fold(0usize, |sum, byte| sum.wrapping_mul(31).wrapping_add(usize::from(byte)));
    match recording.get(rule % recording.len().max(1)) {
        Some((list_id, action)) => {
            event.rule_id = list_id.to_string();
            event.rule_name = format!("Access list {list_id}");
            event.action = (*action).into();
        }
        None => event.feature = "waf".into(),
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(list_id: i64, enabled: bool, action: i64) -> SimAccessList {
        let mut list = SimAccessList::new(list_id + 9000, "list", enabled, action);
        list.details.insert("listId".into(), list_id.into());
        list
    }

    fn requests(list_id: i64, count: u64) -> ListTraffic {
        ListTraffic {
            list_id,
            ip: "192.0.2.1".into(),
            country: "DE".into(),
            asn: String::new(),
            url: "/login".into(),
            ua: String::new(),
            at: None,
            count,
        }
    }

    #[test]
    fn a_list_records_what_its_configuration_does_now_and_nothing_when_it_lets_through() {
        let lists = [
            list(1, true, 4),
            list(2, true, 2),
            list(3, true, 3),
            list(4, true, 1),
            list(5, false, 2),
        ];
        let traffic: Vec<_> = (1..=5).map(|id| requests(id, 2)).collect();
        let recorded: Vec<(String, String, i64)> = events(&lists, &traffic, 77)
            .expect("every list exists")
            .map(|e| (e.rule_id, e.action, e.timestamp))
            .collect();
        let expected = [
            ("1", "logged"),
            ("1", "logged"),
            ("2", "blocked"),
            ("2", "blocked"),
            ("3", "challenged"),
            ("3", "challenged"),
        ]
        .map(|(rule, action)| (rule.to_string(), action.to_string(), 77));
        assert_eq!(recorded, expected);
        assert!(
            events(&lists, &traffic, 77)
                .expect("exist")
                .all(|e| e.feature == "access_list")
        );
    }

    #[test]
    fn generated_access_list_events_are_those_of_the_zone_s_recording_lists() {
        let generated = |feature: &str, rule: &str| EventInput {
            feature: feature.into(),
            rule_id: rule.into(),
            action: "allow".into(),
            ..events(&[list(1, true, 4)], &[requests(1, 1)], 0)
                .expect("exists")
                .next()
                .expect("one")
        };
        let lists = [list(1, true, 1), list(2, true, 2), list(3, false, 4)];
        for rule in ["900001", "900097", "912345"] {
            let event = as_the_lists_record(&lists, generated("access_list", rule));
            assert_eq!(
                (event.rule_id.as_str(), event.action.as_str()),
                ("2", "blocked"),
                "rule {rule}"
            );
        }
        let waf = generated("waf", "900001");
        assert_eq!(as_the_lists_record(&lists, waf.clone()), waf);
        let without = as_the_lists_record(&[list(1, true, 1)], generated("access_list", "900001"));
        assert_eq!(
            without.feature, "waf",
            "a zone with no recording list has no access-list events"
        );
    }

    #[test]
    fn traffic_for_a_list_the_zone_lacks_is_refused_naming_it() {
        let Err(error) = events(&[list(1, true, 4)], &[requests(1, 1), requests(9, 1)], 0).map(|_| ()) else {
            panic!("accepted a list the zone lacks");
        };
        assert_eq!(error, "traffic[1].listId: the zone has no access list 9");
    }
}
