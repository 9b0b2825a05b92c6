//! A property test of the search engine against a naive reference implementation
//! written independently of it.

use super::*;

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
