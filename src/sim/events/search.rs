//! Event-log search: validation of a request against the rules of the spec, and its
//! execution over an [`EventStore`]. No HTTP here.
//!
//! Semantics (see README, "Event-log search semantics"):
//! - window `[from, to)`; `to > from`, `to <= now + 5 min`, `to >= now - 72 h`;
//! - `query`: whitespace-separated terms, each a case-insensitive substring of at least
//!   one of ip, ruleId, url, ua, ruleName;
//! - filters AND-combined, values OR-combined; `eq`/`in` exact, `contains`
//!   case-insensitive substring, `wildcard` case-insensitive full match with `*`,
//!   `cidr` on `ip` only;
//! - groups sorted by count descending then key values ascending; rows by timestamp
//!   descending then logId ascending.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::net::IpAddr;

use ipnet::IpNet;

use super::store::{EventStore, RULE_NAME, TEXT_COLUMNS};
use crate::api::models::GenericRequestResponse;
use crate::api::models::shield::{
    Dimension, EventGroup, EventLogsSearchRequest, EventLogsSearchResponse, EventRow, FilterOp, GroupContext,
};

pub const MAX_PAGE_SIZE: i32 = 500;
pub const DEFAULT_PAGE_SIZE: i32 = 50;
pub const MAX_BUCKETS: i32 = 500;
pub const MAX_FUTURE_MS: i64 = 5 * 60 * 1000;
pub const MAX_AGE_MS: i64 = 72 * 3600 * 1000;

/// Columns searched by the free-text `query`.
const QUERY_COLUMNS: [usize; 5] = [2, 1, 5, 4, RULE_NAME];

/// A request that breaks a rule; `member` is the JSON path of the offending member.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{member}: {message}")]
pub struct SearchError {
    pub member: String,
    pub message: String,
}

fn invalid(member: impl Into<String>, message: impl Into<String>) -> SearchError {
    SearchError {
        member: member.into(),
        message: message.into(),
    }
}

/// One filter, resolved to typed values.
#[derive(Debug, Clone)]
enum Predicate {
    Exact(Vec<String>),
    Contains(Vec<String>),
    Wildcard(Vec<Vec<char>>),
    Cidr(Vec<IpNet>),
}

impl Predicate {
    fn matches(&self, value: &str) -> bool {
        match self {
            Predicate::Exact(values) => values.iter().any(|v| v == value),
            Predicate::Contains(needles) => {
                let haystack = value.to_lowercase();
                needles.iter().any(|n| haystack.contains(n.as_str()))
            }
            Predicate::Wildcard(patterns) => {
                let text: Vec<char> = value.to_lowercase().chars().collect();
                patterns.iter().any(|p| wildcard_match(p, &text))
            }
            Predicate::Cidr(networks) => value
                .parse::<IpAddr>()
                .is_ok_and(|ip| networks.iter().any(|net| net.contains(&ip))),
        }
    }
}

/// Case-folded full match where `*` matches any run of characters (including none).
fn wildcard_match(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == '*' {
            backtrack = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star, matched)) = backtrack {
            p = star + 1;
            t = matched + 1;
            backtrack = Some((star, matched + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

fn parse_network(raw: &str) -> Option<IpNet> {
    let raw = raw.trim();
    raw.parse::<IpNet>()
        .ok()
        .or_else(|| raw.parse::<IpAddr>().ok().map(IpNet::from))
}

/// A request that passed validation, with defaults and clamps applied.
#[derive(Debug, Clone)]
pub struct ValidSearch {
    pub from: i64,
    pub to: i64,
    terms: Vec<String>,
    filters: Vec<(Dimension, Predicate)>,
    pub group_by: Vec<Dimension>,
    pub buckets: usize,
    pub page: usize,
    pub page_size: usize,
}

/// Checks every rule of the spec; `now` is Unix milliseconds.
pub fn validate(request: &EventLogsSearchRequest, now: i64) -> Result<ValidSearch, SearchError> {
    if request.to <= request.from {
        return Err(invalid("to", "must be after `from`"));
    }
    if request.to > now.saturating_add(MAX_FUTURE_MS) {
        return Err(invalid("to", "must not be more than 5 minutes in the future"));
    }
    if request.to < now.saturating_sub(MAX_AGE_MS) {
        return Err(invalid("to", "must be within the last 72 hours"));
    }
    let page = request.page.unwrap_or(0);
    if page < 0 {
        return Err(invalid("page", "must not be negative"));
    }
    let buckets = request.buckets.unwrap_or(0);
    if buckets < 0 {
        return Err(invalid("buckets", "must not be negative"));
    }
    let page_size = match request.page_size.unwrap_or(0) {
        0 => DEFAULT_PAGE_SIZE,
        n => n.clamp(1, MAX_PAGE_SIZE),
    };
    let group_by = request.group_by.clone().unwrap_or_default();
    for (i, dimension) in group_by.iter().enumerate() {
        if group_by[..i].contains(dimension) {
            return Err(invalid(
                format!("groupBy[{i}]"),
                format!("dimension `{dimension}` is repeated"),
            ));
        }
    }
    let filters = request
        .filters
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, filter)| {
            let member = |name: &str| format!("filters[{i}].{name}");
            let field = filter.field.ok_or_else(|| invalid(member("field"), "is required"))?;
            let op = filter.op.ok_or_else(|| invalid(member("op"), "is required"))?;
            let values = filter.value.as_deref().unwrap_or_default();
            if values.is_empty() {
                return Err(invalid(member("value"), "must hold at least one value"));
            }
            let lowered = || values.iter().map(|v| v.to_lowercase()).collect::<Vec<_>>();
            let predicate = match op {
                FilterOp::Eq | FilterOp::In => Predicate::Exact(values.to_vec()),
                FilterOp::Contains => Predicate::Contains(lowered()),
                FilterOp::Wildcard => Predicate::Wildcard(lowered().iter().map(|v| v.chars().collect()).collect()),
                FilterOp::Cidr if field != Dimension::Ip => {
                    return Err(invalid(
                        member("op"),
                        format!("`cidr` applies to field `ip` only, not `{field}`"),
                    ));
                }
                FilterOp::Cidr => Predicate::Cidr(
                    values
                        .iter()
                        .enumerate()
                        .map(|(j, v)| {
                            parse_network(v).ok_or_else(|| {
                                invalid(format!("filters[{i}].value[{j}]"), format!("`{v}` is not an IP prefix"))
                            })
                        })
                        .collect::<Result<_, _>>()?,
                ),
            };
            Ok((field, predicate))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let terms = request
        .query
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    Ok(ValidSearch {
        from: request.from,
        to: request.to,
        terms,
        filters,
        group_by,
        buckets: buckets.min(MAX_BUCKETS) as usize,
        page: page as usize,
        page_size: page_size as usize,
    })
}

/// Per-dictionary-id truth tables: each predicate is evaluated once per distinct value.
struct MatchTables {
    filters: Vec<(usize, Vec<bool>)>,
    terms: Vec<[Vec<bool>; QUERY_COLUMNS.len()]>,
}

impl MatchTables {
    fn build(search: &ValidSearch, store: &EventStore) -> Self {
        let table = |column: usize, test: &dyn Fn(&str) -> bool| -> Vec<bool> {
            store.dictionary(column).values().map(test).collect()
        };
        let filters = search
            .filters
            .iter()
            .map(|(dimension, predicate)| {
                let column = dimension.index();
                (column, table(column, &|v| predicate.matches(v)))
            })
            .collect();
        let terms = search
            .terms
            .iter()
            .map(|term| QUERY_COLUMNS.map(|column| table(column, &|v| v.to_lowercase().contains(term.as_str()))))
            .collect();
        Self { filters, terms }
    }

    fn matches(&self, store: &EventStore, row: usize) -> bool {
        self.filters
            .iter()
            .all(|(column, table)| table[store.column(*column)[row] as usize])
            && self.terms.iter().all(|tables| {
                QUERY_COLUMNS
                    .iter()
                    .zip(tables)
                    .any(|(&column, table)| table[store.column(column)[row] as usize])
            })
    }
}

fn total_pages(total: usize, page_size: usize) -> i32 {
    i32::try_from(total.div_ceil(page_size)).unwrap_or(i32::MAX)
}

/// Runs a validated search.
pub fn execute(search: &ValidSearch, store: &EventStore) -> EventLogsSearchResponse {
    let tables = MatchTables::build(search, store);
    let rows = store
        .window(search.from, search.to)
        .filter(|&row| tables.matches(store, row));
    if search.group_by.is_empty() {
        flat(search, store, rows)
    } else {
        grouped(search, store, rows)
    }
}

fn page_bounds(search: &ValidSearch) -> (usize, usize) {
    let start = search.page.saturating_mul(search.page_size);
    (start, start.saturating_add(search.page_size))
}

fn response(search: &ValidSearch, total: usize) -> EventLogsSearchResponse {
    EventLogsSearchResponse {
        rows: None,
        groups: None,
        total: total as i64,
        total_pages: total_pages(total, search.page_size),
        page: i32::try_from(search.page).unwrap_or(i32::MAX),
        error_response: Some(GenericRequestResponse::ok()),
    }
}

fn flat(search: &ValidSearch, store: &EventStore, rows: impl Iterator<Item = usize>) -> EventLogsSearchResponse {
    let (start, end) = page_bounds(search);
    let mut total = 0;
    let mut page = Vec::new();
    for row in rows {
        if (start..end).contains(&total) {
            page.push(event_row(store, row));
        }
        total += 1;
    }
    EventLogsSearchResponse {
        rows: Some(page),
        ..response(search, total)
    }
}

fn event_row(store: &EventStore, row: usize) -> EventRow {
    let mut fields: BTreeMap<String, String> = Dimension::ALL
        .iter()
        .map(|d| (d.as_str().to_string(), store.text(d.index(), row).to_string()))
        .collect();
    fields.insert("ruleName".to_string(), store.text(RULE_NAME, row).to_string());
    EventRow {
        log_id: Some(store.log_id(row).to_string()),
        timestamp: store.timestamp(row),
        log: store.log(row),
        fields: Some(fields),
    }
}

/// Assigns each distinct tuple of groupBy dictionary ids a dense group number, one
/// level per dimension: level k maps (group of the first k dimensions, id) to a group.
struct GroupKeys {
    columns: Vec<usize>,
    levels: Vec<Level>,
}

#[derive(Default)]
struct Level {
    ids: FxHashMap<(u32, u32), u32>,
    entries: Vec<(u32, u32)>,
}

impl GroupKeys {
    fn new(columns: Vec<usize>) -> Self {
        let levels = (1..columns.len()).map(|_| Level::default()).collect();
        Self { columns, levels }
    }

    fn group_of(&mut self, store: &EventStore, row: usize) -> usize {
        let mut group = store.column(self.columns[0])[row];
        for (level, column) in self.levels.iter_mut().zip(&self.columns[1..]) {
            let key = (group, store.column(*column)[row]);
            let Level { ids, entries } = level;
            group = *ids.entry(key).or_insert_with(|| {
                entries.push(key);
                (entries.len() - 1) as u32
            });
        }
        group as usize
    }

    /// Dictionary ids of a group, in groupBy order.
    fn tuple(&self, group: usize) -> Vec<u32> {
        let mut tuple = vec![0; self.columns.len()];
        let mut group = group as u32;
        for (position, level) in self.levels.iter().enumerate().rev() {
            let (parent, id) = level.entries[group as usize];
            tuple[position + 1] = id;
            group = parent;
        }
        tuple[0] = group;
        tuple
    }
}

#[derive(Debug, Clone, Copy)]
struct GroupTotals {
    count: i64,
    first_seen: i64,
    last_seen: i64,
}

#[derive(Default)]
struct GroupDetail {
    countries: FxHashMap<u32, i64>,
    asns: FxHashMap<u32, i64>,
    blocked: i64,
    challenged: i64,
    logged: i64,
    features: Vec<u32>,
    rule_ids: Vec<u32>,
    sparkline: Vec<i64>,
}

fn action_kind(action: &str) -> Option<usize> {
    ["block", "challenge", "log"]
        .iter()
        .position(|kind| kind.eq_ignore_ascii_case(action))
}

fn grouped(search: &ValidSearch, store: &EventStore, rows: impl Iterator<Item = usize>) -> EventLogsSearchResponse {
    let columns: Vec<usize> = search.group_by.iter().map(|d| d.index()).collect();
    let mut keys = GroupKeys::new(columns.clone());
    let mut totals: Vec<Option<GroupTotals>> = Vec::new();
    let mut matched: Vec<(u32, u32)> = Vec::new();
    for row in rows {
        let group = keys.group_of(store, row);
        if group >= totals.len() {
            totals.resize(group + 1, None);
        }
        let t = store.timestamp(row);
        let entry = totals[group].get_or_insert(GroupTotals {
            count: 0,
            first_seen: t,
            last_seen: t,
        });
        entry.count += 1;
        entry.first_seen = entry.first_seen.min(t);
        entry.last_seen = entry.last_seen.max(t);
        matched.push((row as u32, group as u32));
    }

    let mut groups: Vec<(usize, GroupTotals, Vec<u32>)> = Vec::new();
    for (group, slot) in totals.iter().enumerate() {
        if let Some(t) = slot {
            let ranks = keys
                .tuple(group)
                .iter()
                .zip(&columns)
                .map(|(&id, &column)| store.dictionary(column).rank(id))
                .collect();
            groups.push((group, *t, ranks));
        }
    }
    let total = groups.len();
    let (start, end) = page_bounds(search);
    let order = |a: &(usize, GroupTotals, Vec<u32>), b: &(usize, GroupTotals, Vec<u32>)| {
        b.1.count.cmp(&a.1.count).then_with(|| a.2.cmp(&b.2))
    };
    if end < groups.len() {
        groups.select_nth_unstable_by(end, order);
        groups.truncate(end);
    }
    groups.sort_unstable_by(order);
    let page: Vec<(usize, GroupTotals)> = groups
        .into_iter()
        .skip(start)
        .map(|(group, totals, _)| (group, totals))
        .collect();

    let slot_of: FxHashMap<u32, usize> = page
        .iter()
        .enumerate()
        .map(|(slot, (g, _))| (*g as u32, slot))
        .collect();
    let mut details: Vec<GroupDetail> = page
        .iter()
        .map(|_| GroupDetail {
            sparkline: vec![0; search.buckets],
            ..GroupDetail::default()
        })
        .collect();
    let action_kinds: Vec<Option<usize>> = store
        .dictionary(Dimension::Action.index())
        .values()
        .map(action_kind)
        .collect();
    let span = i128::from(search.to) - i128::from(search.from);
    for &(row, group) in &matched {
        let Some(&slot) = slot_of.get(&group) else {
            continue;
        };
        let row = row as usize;
        let detail = &mut details[slot];
        *detail
            .countries
            .entry(store.column(Dimension::Country.index())[row])
            .or_default() += 1;
        *detail
            .asns
            .entry(store.column(Dimension::Asn.index())[row])
            .or_default() += 1;
        match action_kinds[store.column(Dimension::Action.index())[row] as usize] {
            Some(0) => detail.blocked += 1,
            Some(1) => detail.challenged += 1,
            Some(2) => detail.logged += 1,
            _ => {}
        }
        detail.features.push(store.column(Dimension::Feature.index())[row]);
        detail.rule_ids.push(store.column(Dimension::RuleId.index())[row]);
        if search.buckets > 0 {
            let offset = i128::from(store.timestamp(row)) - i128::from(search.from);
            let bucket = (offset * search.buckets as i128 / span) as usize;
            detail.sparkline[bucket] += 1;
        }
    }

    let groups = page
        .into_iter()
        .zip(details)
        .map(|((group, totals), detail)| {
            let key = keys
                .tuple(group)
                .iter()
                .zip(&search.group_by)
                .map(|(&id, dimension)| {
                    (
                        dimension.as_str().to_string(),
                        store.dictionary(dimension.index()).value(id).to_string(),
                    )
                })
                .collect();
            EventGroup {
                key: Some(key),
                count: totals.count,
                first_seen: totals.first_seen,
                last_seen: totals.last_seen,
                context: Some(GroupContext {
                    country: most_frequent(store, Dimension::Country, &detail.countries),
                    asn: most_frequent(store, Dimension::Asn, &detail.asns),
                    blocked: detail.blocked,
                    challenged: detail.challenged,
                    logged: detail.logged,
                    features: distinct_joined(store, Dimension::Feature, detail.features),
                    rule_ids: distinct_joined(store, Dimension::RuleId, detail.rule_ids),
                }),
                sparkline: (search.buckets > 0).then_some(detail.sparkline),
            }
        })
        .collect();
    EventLogsSearchResponse {
        groups: Some(groups),
        ..response(search, total)
    }
}

/// Most frequent value; ties go to the smallest value.
fn most_frequent(store: &EventStore, dimension: Dimension, counts: &FxHashMap<u32, i64>) -> String {
    let dictionary = store.dictionary(dimension.index());
    counts
        .iter()
        .max_by(|(a, ca), (b, cb)| ca.cmp(cb).then_with(|| dictionary.rank(**b).cmp(&dictionary.rank(**a))))
        .map(|(&id, _)| dictionary.value(id).to_string())
        .unwrap_or_default()
}

fn distinct_joined(store: &EventStore, dimension: Dimension, mut ids: Vec<u32>) -> String {
    let dictionary = store.dictionary(dimension.index());
    ids.sort_unstable_by_key(|&id| dictionary.rank(id));
    ids.dedup();
    ids.iter().map(|&id| dictionary.value(id)).collect::<Vec<_>>().join(",")
}

const _: () = assert!(TEXT_COLUMNS == RULE_NAME + 1);
