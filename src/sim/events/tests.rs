//! Search engine tests: pinned semantics, and a property test against a naive
//! reference implementation written independently of the engine.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use proptest::prelude::*;

use super::group::{ContextPass, Grouping};
use super::*;
use crate::api::models::shield::{
    Dimension, EventGroup, EventLogsFilter, EventLogsSearchRequest, EventLogsSearchResponse, EventRow, FilterOp,
    GroupContext,
};

mod against_reference;

const NOW: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

fn event(id: &str, timestamp: i64, ip: &str, rule: &str, action: &str) -> EventInput {
    EventInput {
        log_id: Some(id.to_string()),
        timestamp,
        feature: "waf".into(),
        rule_id: rule.into(),
        ip: ip.into(),
        ja4: "t13d1516h2_8daaf6152771_02713d6af862".into(),
        ua: "Mozilla/5.0".into(),
        url: "https://shop.example.com/login".into(),
        asn: "64500".into(),
        country: "DE".into(),
        action: action.into(),
        rule_name: format!("Rule {rule}"),
        log: None,
    }
}

fn store_of(events: Vec<EventInput>) -> EventStore {
    let mut store = EventStore::default();
    store.insert(events);
    store
}

fn run(store: &EventStore, request: &EventLogsSearchRequest) -> Result<EventLogsSearchResponse, SearchError> {
    validate(request, NOW).map(|search| execute(&search, store))
}

fn ids(response: &EventLogsSearchResponse) -> Vec<String> {
    response
        .rows
        .iter()
        .flatten()
        .filter_map(|r| r.log_id.clone())
        .collect()
}

#[test]
fn window_is_half_open_and_rows_sort_by_time_then_log_id() {
    let from = NOW - HOUR;
    let store = store_of(vec![
        event("b", from, "1.1.1.1", "r1", "block"),
        event("a", from, "1.1.1.1", "r1", "block"),
        event("c", from + 10, "1.1.1.1", "r1", "block"),
        event("late", NOW, "1.1.1.1", "r1", "block"),
        event("early", from - 1, "1.1.1.1", "r1", "block"),
    ]);
    let response = run(&store, &EventLogsSearchRequest::window(from, NOW)).expect("valid");
    assert_eq!(ids(&response), ["c", "a", "b"]);
    assert_eq!(response.total, 3);
    assert!(response.groups.is_none());
}

#[test]
fn window_rules_are_enforced() {
    let cases = [
        (NOW, NOW, "to"),
        (NOW - 10, NOW - 20, "to"),
        (NOW, NOW + 5 * 60_000 + 1, "to"),
        (NOW - 80 * HOUR, NOW - 72 * HOUR - 1, "to"),
    ];
    for (from, to, member) in cases {
        let err = validate(&EventLogsSearchRequest::window(from, to), NOW).expect_err("invalid window");
        assert_eq!(err.member, member, "{from}..{to}");
    }
    assert!(validate(&EventLogsSearchRequest::window(NOW - 1, NOW + 5 * 60_000), NOW).is_ok());
    assert!(validate(&EventLogsSearchRequest::window(NOW - 80 * HOUR, NOW - 72 * HOUR), NOW).is_ok());
}

#[test]
fn clamps_and_defaults() {
    let base = EventLogsSearchRequest::window(NOW - HOUR, NOW);
    let valid = |r: EventLogsSearchRequest| validate(&r, NOW).expect("valid");
    assert_eq!(valid(base.clone()).page_size, 50);
    assert_eq!(valid(base.clone().page_size(0)).page_size, 50);
    assert_eq!(valid(base.clone().page_size(-3)).page_size, 1);
    assert_eq!(valid(base.clone().page_size(501)).page_size, 500);
    assert_eq!(valid(base.clone().buckets(0)).buckets, 0);
    assert_eq!(valid(base.clone().buckets(9999)).buckets, 500);
    assert_eq!(
        validate(&base.clone().buckets(-1), NOW).expect_err("neg").member,
        "buckets"
    );
    assert_eq!(validate(&base.clone().page(-1), NOW).expect_err("neg").member, "page");
}

#[test]
fn filter_errors_name_the_member() {
    let base = EventLogsSearchRequest::window(NOW - HOUR, NOW);
    let cases = [
        (
            EventLogsFilter::new(Dimension::Url, FilterOp::Cidr, ["10.0.0.0/8"]),
            "filters[0].op",
        ),
        (
            EventLogsFilter::new(Dimension::Ip, FilterOp::Cidr, ["10.0.0.0/8", "nope"]),
            "filters[0].value[1]",
        ),
        (
            EventLogsFilter::new(Dimension::Ip, FilterOp::Eq, Vec::<String>::new()),
            "filters[0].value",
        ),
        (
            EventLogsFilter {
                field: None,
                op: Some(FilterOp::Eq),
                value: Some(vec!["x".into()]),
            },
            "filters[0].field",
        ),
        (
            EventLogsFilter {
                field: Some(Dimension::Ip),
                op: None,
                value: Some(vec!["x".into()]),
            },
            "filters[0].op",
        ),
    ];
    for (filter, member) in cases {
        let err = validate(&base.clone().filter(filter), NOW).expect_err("invalid filter");
        assert_eq!(err.member, member);
    }
    let repeated = base.group_by([Dimension::Ip, Dimension::Ip]);
    assert_eq!(validate(&repeated, NOW).expect_err("repeat").member, "groupBy[1]");
}

#[test]
fn cidr_matches_ipv4_and_ipv6_prefixes_and_bare_addresses() {
    let t = NOW - 1000;
    let store = store_of(vec![
        event("v4a", t, "192.0.2.10", "r", "block"),
        event("v4b", t, "198.51.100.7", "r", "block"),
        event("v6a", t, "2001:db8::1", "r", "block"),
        event("v6b", t, "2001:db9::1", "r", "block"),
        event("bad", t, "not-an-ip", "r", "block"),
    ]);
    let search = |values: &[&str]| {
        let request = EventLogsSearchRequest::window(NOW - HOUR, NOW).filter(EventLogsFilter::new(
            Dimension::Ip,
            FilterOp::Cidr,
            values.iter().copied(),
        ));
        ids(&run(&store, &request).expect("valid"))
    };
    assert_eq!(search(&["192.0.2.0/24"]), ["v4a"]);
    assert_eq!(search(&["2001:db8::/32"]), ["v6a"]);
    assert_eq!(search(&["198.51.100.7", "2001:db9::1"]), ["v4b", "v6b"]);
    assert_eq!(search(&["0.0.0.0/0"]), ["v4a", "v4b"]);
}

#[test]
fn wildcard_contains_and_query_are_case_insensitive() {
    let t = NOW - 1000;
    let mut a = event("a", t, "1.1.1.1", "SQLI-942100", "block");
    a.url = "https://Shop.example.com/Admin/login.php".into();
    let mut b = event("b", t, "2.2.2.2", "xss-941100", "log");
    b.url = "https://shop.example.com/search".into();
    let store = store_of(vec![a, b]);
    let with =
        |filter| ids(&run(&store, &EventLogsSearchRequest::window(NOW - HOUR, NOW).filter(filter)).expect("valid"));
    assert_eq!(
        with(EventLogsFilter::new(
            Dimension::Url,
            FilterOp::Wildcard,
            ["*/admin/*.PHP"]
        )),
        ["a"]
    );
    assert_eq!(
        with(EventLogsFilter::new(Dimension::Url, FilterOp::Wildcard, ["*/admin"])),
        Vec::<String>::new()
    );
    assert_eq!(
        with(EventLogsFilter::new(Dimension::RuleId, FilterOp::Contains, ["sqli"])),
        ["a"]
    );
    assert_eq!(
        with(EventLogsFilter::new(Dimension::RuleId, FilterOp::Eq, ["sqli-942100"])),
        Vec::<String>::new()
    );
    let query = |q: &str| ids(&run(&store, &EventLogsSearchRequest::window(NOW - HOUR, NOW).query(q)).expect("valid"));
    assert_eq!(query("ADMIN 1.1.1"), ["a"]);
    assert_eq!(query("rule xss"), ["b"]);
    assert_eq!(query("admin xss"), Vec::<String>::new());
}

#[test]
fn sparkline_buckets_cover_the_window_exactly() {
    let from = NOW - 1000;
    let to = NOW;
    let store = store_of(vec![
        event("first", from, "1.1.1.1", "r", "block"),
        event("end-of-first", from + 333, "1.1.1.1", "r", "block"),
        event("start-of-second", from + 334, "1.1.1.1", "r", "block"),
        event("last", to - 1, "1.1.1.1", "r", "block"),
    ]);
    let request = EventLogsSearchRequest::window(from, to)
        .group_by([Dimension::Ip])
        .buckets(3);
    let response = run(&store, &request).expect("valid");
    let group = &response.groups.expect("grouped")[0];
    // width 1000/3: bucket 0 = [0, 333.3), bucket 1 = [333.3, 666.6), bucket 2 = [666.6, 1000)
    assert_eq!(group.sparkline, Some(vec![2, 1, 1]));
    let sparkline = |offset: i64| {
        let store = store_of(vec![event("x", from + offset, "1.1.1.1", "r", "block")]);
        run(&store, &request).expect("valid").groups.expect("grouped")[0]
            .sparkline
            .clone()
    };
    assert_eq!(sparkline(666), Some(vec![0, 1, 0]));
    assert_eq!(sparkline(667), Some(vec![0, 0, 1]));
    assert_eq!(group.sparkline.iter().flatten().sum::<i64>(), group.count);
    assert!(response.rows.is_none());
}

#[test]
fn sparkline_is_exact_for_windows_wider_than_i64_arithmetic() {
    let store = store_of(vec![event("a", NOW - 1, "1.1.1.1", "r", "block")]);
    let request = EventLogsSearchRequest::window(i64::MIN, NOW)
        .group_by([Dimension::Ip])
        .buckets(500);
    let response = run(&store, &request).expect("valid");
    let sparkline = response.groups.expect("grouped")[0]
        .sparkline
        .clone()
        .expect("sparkline");
    let expected =
        ((i128::from(NOW - 1) - i128::from(i64::MIN)) * 500 / (i128::from(NOW) - i128::from(i64::MIN))) as usize;
    assert_eq!(sparkline[expected], 1);
    assert_eq!(expected, 499);
}

#[test]
fn groups_sort_by_count_then_key_and_carry_context() {
    let t = NOW - 1000;
    let mut events = vec![
        event("1", t, "9.9.9.9", "r2", "block"),
        event("2", t + 1, "9.9.9.9", "r1", "challenge"),
        event("3", t + 2, "1.1.1.1", "r1", "log"),
        event("4", t + 3, "5.5.5.5", "r1", "block"),
    ];
    events[1].country = "FR".into();
    let store = store_of(events);
    let request = EventLogsSearchRequest::window(NOW - HOUR, NOW).group_by([Dimension::Ip]);
    let response = run(&store, &request).expect("valid");
    let groups = response.groups.expect("grouped");
    let keys: Vec<_> = groups
        .iter()
        .map(|g| g.key.clone().expect("key")["ip"].clone())
        .collect();
    assert_eq!(keys, ["9.9.9.9", "1.1.1.1", "5.5.5.5"]);
    let top = &groups[0];
    assert_eq!((top.count, top.first_seen, top.last_seen), (2, t, t + 1));
    let context = top.context.as_ref().expect("context");
    assert_eq!(context.country, "DE", "tie between DE and FR goes to the smallest");
    assert_eq!((context.blocked, context.challenged, context.logged), (1, 1, 0));
    assert_eq!(context.rule_ids, "r1,r2");
    assert_eq!(response.total, 3);
}

#[test]
fn context_counts_both_spellings_of_each_action_in_any_case() {
    let t = NOW - 1000;
    let actions = [
        "block",
        "Blocked",
        "CHALLENGE",
        "challenged",
        "Log",
        "LOGGED",
        "allow",
        "blocking",
    ];
    let events = actions
        .iter()
        .enumerate()
        .map(|(i, action)| event(&format!("e{i}"), t + i as i64, "1.1.1.1", "r", action));
    let store = store_of(events.collect());
    let request = EventLogsSearchRequest::window(NOW - HOUR, NOW).group_by([Dimension::Ip]);
    let groups = run(&store, &request).expect("valid").groups.expect("grouped");
    let context = groups[0].context.as_ref().expect("context");
    assert_eq!((context.blocked, context.challenged, context.logged), (2, 2, 2));
}

#[test]
fn pagination_past_the_end_is_empty() {
    let events = (0..7).map(|i| event(&format!("e{i}"), NOW - 100 - i, "1.1.1.1", "r", "block"));
    let store = store_of(events.collect());
    let request = EventLogsSearchRequest::window(NOW - HOUR, NOW).page_size(3);
    let page = |n| run(&store, &request.clone().page(n)).expect("valid");
    assert_eq!(page(0).total_pages, 3);
    assert_eq!(ids(&page(2)), ["e6"]);
    assert!(ids(&page(3)).is_empty());
    assert_eq!(page(3).total, 7);
}
