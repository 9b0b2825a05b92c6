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

// ---- property test against a naive reference ----

fn reference_wildcard(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|skip| reference_wildcard(rest, &text[skip..])),
        Some((c, rest)) => text.first() == Some(c) && reference_wildcard(rest, &text[1..]),
    }
}

fn reference_filter(filter: &EventLogsFilter, value: &str) -> bool {
    let values = filter.value.as_deref().unwrap_or_default();
    values.iter().any(|v| match filter.op.expect("op") {
        FilterOp::Eq | FilterOp::In => v == value,
        FilterOp::Contains => value.to_lowercase().contains(&v.to_lowercase()),
        FilterOp::Wildcard => {
            let p: Vec<char> = v.to_lowercase().chars().collect();
            let t: Vec<char> = value.to_lowercase().chars().collect();
            reference_wildcard(&p, &t)
        }
        FilterOp::Cidr => {
            let net: ipnet::IpNet = v
                .parse()
                .unwrap_or_else(|_| ipnet::IpNet::from(v.parse::<IpAddr>().expect("generated address")));
            value.parse::<IpAddr>().is_ok_and(|ip| net.contains(&ip))
        }
    })
}

fn reference_search(events: &[EventInput], request: &EventLogsSearchRequest) -> EventLogsSearchResponse {
    let page_size = match request.page_size.unwrap_or(0) {
        0 => 50,
        n => n.clamp(1, 500),
    } as usize;
    let page = request.page.unwrap_or(0) as usize;
    let buckets = request.buckets.unwrap_or(0).min(500) as usize;
    let terms: Vec<String> = request
        .query
        .clone()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    let mut matched: Vec<&EventInput> = events
        .iter()
        .filter(|e| e.timestamp >= request.from && e.timestamp < request.to)
        .filter(|e| {
            terms.iter().all(|term| {
                [&e.ip, &e.rule_id, &e.url, &e.ua, &e.rule_name]
                    .iter()
                    .any(|v| v.to_lowercase().contains(term))
            })
        })
        .filter(|e| {
            request
                .filters
                .iter()
                .flatten()
                .all(|f| reference_filter(f, e.dimension(f.field.expect("field"))))
        })
        .collect();
    matched.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then_with(|| a.log_id.cmp(&b.log_id)));
    let group_by = request.group_by.clone().unwrap_or_default();
    let pages = |total: usize| total.div_ceil(page_size) as i32;
    if group_by.is_empty() {
        let rows: Vec<EventRow> = matched
            .iter()
            .skip(page * page_size)
            .take(page_size)
            .map(|e| {
                let mut fields: BTreeMap<String, String> = Dimension::ALL
                    .iter()
                    .map(|d| (d.as_str().to_string(), e.dimension(*d).to_string()))
                    .collect();
                fields.insert("ruleName".into(), e.rule_name.clone());
                EventRow {
                    log_id: e.log_id.clone(),
                    timestamp: e.timestamp,
                    log: e.log.clone().map(serde_json::Value::Object),
                    fields: Some(fields),
                }
            })
            .collect();
        return EventLogsSearchResponse {
            rows: Some(rows),
            groups: None,
            total: matched.len() as i64,
            total_pages: pages(matched.len()),
            page: page as i32,
            error_response: Some(crate::api::models::GenericRequestResponse::ok()),
        };
    }
    let mut groups: BTreeMap<Vec<String>, Vec<&EventInput>> = BTreeMap::new();
    for e in &matched {
        let key = group_by.iter().map(|d| e.dimension(*d).to_string()).collect();
        groups.entry(key).or_default().push(e);
    }
    let mut groups: Vec<(Vec<String>, Vec<&EventInput>)> = groups.into_iter().collect();
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    let total = groups.len();
    let mode = |values: Vec<&str>| {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for v in values {
            *counts.entry(v).or_default() += 1;
        }
        let best = counts.values().copied().max().unwrap_or(0);
        counts
            .into_iter()
            .find(|(_, c)| *c == best)
            .map(|(v, _)| v.to_string())
            .unwrap_or_default()
    };
    let joined = |values: BTreeSet<&str>| values.into_iter().collect::<Vec<_>>().join(",");
    let groups = groups
        .into_iter()
        .skip(page * page_size)
        .take(page_size)
        .map(|(key, members)| {
            let count_action = |verb: &str, participle: &str| {
                let is =
                    |e: &&&EventInput| e.action.eq_ignore_ascii_case(verb) || e.action.eq_ignore_ascii_case(participle);
                members.iter().filter(is).count() as i64
            };
            let sparkline = (buckets > 0).then(|| {
                let mut line = vec![0i64; buckets];
                for e in &members {
                    let i = (i128::from(e.timestamp - request.from) * buckets as i128
                        / i128::from(request.to - request.from)) as usize;
                    line[i] += 1;
                }
                line
            });
            EventGroup {
                key: Some(group_by.iter().map(|d| d.as_str().to_string()).zip(key).collect()),
                count: members.len() as i64,
                first_seen: members.iter().map(|e| e.timestamp).min().unwrap_or_default(),
                last_seen: members.iter().map(|e| e.timestamp).max().unwrap_or_default(),
                context: Some(GroupContext {
                    country: mode(members.iter().map(|e| e.country.as_str()).collect()),
                    asn: mode(members.iter().map(|e| e.asn.as_str()).collect()),
                    blocked: count_action("block", "blocked"),
                    challenged: count_action("challenge", "challenged"),
                    logged: count_action("log", "logged"),
                    features: joined(members.iter().map(|e| e.feature.as_str()).collect()),
                    rule_ids: joined(members.iter().map(|e| e.rule_id.as_str()).collect()),
                }),
                sparkline,
            }
        })
        .collect();
    EventLogsSearchResponse {
        rows: None,
        groups: Some(groups),
        total: total as i64,
        total_pages: pages(total),
        page: page as i32,
        error_response: Some(crate::api::models::GenericRequestResponse::ok()),
    }
}

const IPS: [&str; 6] = [
    "10.0.0.1",
    "10.0.0.2",
    "10.1.2.3",
    "192.168.1.9",
    "2001:db8::5",
    "2001:db8:1::9",
];
const RULES: [&str; 4] = ["942100", "941100", "RL-1", "bot-7"];
const URLS: [&str; 4] = ["/login", "/Admin/panel", "/search?q=x", "/api/v1/items"];
const COUNTRIES: [&str; 3] = ["DE", "US", "FR"];
const ACTIONS: [&str; 8] = [
    "block",
    "challenge",
    "log",
    "allow",
    "Blocked",
    "CHALLENGED",
    "logged",
    "Allowed",
];
const FEATURES: [&str; 3] = ["waf", "rate_limit", "bot_detection"];

fn arb_event(index: usize) -> impl Strategy<Value = EventInput> {
    (
        0..3_600_000i64,
        0..6usize,
        0..4usize,
        0..4usize,
        0..3usize,
        0..ACTIONS.len(),
        0..3usize,
        0..3usize,
    )
        .prop_map(move |(age, ip, rule, url, country, action, feature, asn)| EventInput {
            log_id: Some(format!("id-{:03}", index % 40)),
            timestamp: NOW - 1 - age,
            feature: FEATURES[feature].into(),
            rule_id: RULES[rule].into(),
            ip: IPS[ip].into(),
            ja4: format!("ja4-{}", ip % 2),
            ua: if ip % 2 == 0 {
                "curl/8.0".into()
            } else {
                "Mozilla/5.0 (X11)".into()
            },
            url: URLS[url].into(),
            asn: ["64500", "13335", "64501"][asn].into(),
            country: COUNTRIES[country].into(),
            action: ACTIONS[action].into(),
            rule_name: format!("Rule {}", RULES[rule]),
            log: None,
        })
}

fn arb_filter() -> impl Strategy<Value = EventLogsFilter> {
    prop_oneof![
        (0..6usize).prop_map(|i| EventLogsFilter::new(Dimension::Ip, FilterOp::Eq, [IPS[i]])),
        prop::sample::subsequence(RULES.to_vec(), 1..3).prop_map(|v| EventLogsFilter::new(
            Dimension::RuleId,
            FilterOp::In,
            v
        )),
        prop::sample::select(vec!["admin", "LOGIN", "/api", "?"]).prop_map(|v| EventLogsFilter::new(
            Dimension::Url,
            FilterOp::Contains,
            [v]
        )),
        prop::sample::select(vec!["*admin*", "/*", "*s", "/login", "*a*i*"]).prop_map(|v| EventLogsFilter::new(
            Dimension::Url,
            FilterOp::Wildcard,
            [v]
        )),
        prop::sample::select(vec!["10.0.0.0/24", "10.0.0.0/8", "2001:db8::/48", "10.1.2.3", "::/0"])
            .prop_map(|v| EventLogsFilter::new(Dimension::Ip, FilterOp::Cidr, [v])),
        prop::sample::select(vec!["block", "log"]).prop_map(|v| EventLogsFilter::new(
            Dimension::Action,
            FilterOp::Eq,
            [v]
        )),
    ]
}

fn arb_request() -> impl Strategy<Value = EventLogsSearchRequest> {
    (
        0..3_600_000i64,
        1..3_600_000i64,
        prop::option::of(prop::sample::select(vec![
            "10.0", "rule 94", "ADMIN", "curl", "x y z", "",
        ])),
        prop::collection::vec(arb_filter(), 0..3),
        prop::option::of(prop::sample::subsequence(Dimension::ALL.to_vec(), 1..6).prop_shuffle()),
        prop::option::of(0..40i32),
        prop::option::of(0..4i32),
        prop::option::of(-2..30i32),
    )
        .prop_map(|(start, len, query, filters, group_by, buckets, page, page_size)| {
            let from = NOW - start - 1;
            EventLogsSearchRequest {
                from,
                to: (from + len).min(NOW),
                query: query.map(str::to_string),
                filters: (!filters.is_empty()).then_some(filters),
                group_by,
                buckets,
                page,
                page_size,
            }
        })
}

fn arb_events() -> impl Strategy<Value = Vec<EventInput>> {
    (0..120usize).prop_flat_map(|n| (0..n).map(arb_event).collect::<Vec<_>>())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn search_agrees_with_the_reference(events in arb_events(), request in arb_request()) {
        let store = store_of(events.clone());
        let actual = run(&store, &request).expect("generated requests are valid");
        let expected = reference_search(&events, &request);
        prop_assert_eq!(&actual, &expected);
        // The same search by every other strategy: grouped dimension by dimension, as
        // for key spaces too large to sort in one pass, each context pass, and tallies
        // that list what they counted, as for large dictionaries.
        let search = validate(&request, NOW).expect("generated requests are valid");
        for packed_key_bits in [0, Grouping::FASTEST.packed_key_bits] {
            for context in [ContextPass::RowOrder, ContextPass::ByGroup] {
                for scanned_dictionary in [0, Grouping::FASTEST.scanned_dictionary] {
                    let grouping = Grouping { packed_key_bits, context, scanned_dictionary };
                    prop_assert_eq!(&super::search::execute_with(&search, &store, grouping), &expected);
                }
            }
        }
    }
}
