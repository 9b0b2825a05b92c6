//! The rules of a search request, checked before anything runs: window, page, query
//! terms, filters (resolved to typed predicates) and grouping.

use std::net::IpAddr;

use ipnet::IpNet;

use super::store::Column;
use crate::api::models::shield::{Dimension, EventLogsFilter, EventLogsSearchRequest, FilterOp};

pub(crate) const MAX_PAGE_SIZE: i32 = 500;
pub(crate) const DEFAULT_PAGE_SIZE: i32 = 50;
pub(crate) const MAX_BUCKETS: i32 = 500;
pub(crate) const MAX_FUTURE_MS: i64 = 5 * 60 * 1000;
pub(crate) const MAX_AGE_MS: i64 = 72 * 3600 * 1000;

/// Columns searched by the free-text `query`.
pub(super) const QUERY_COLUMNS: [Column; 5] = [
    Column::Dimension(Dimension::Ip),
    Column::Dimension(Dimension::RuleId),
    Column::Dimension(Dimension::Url),
    Column::Dimension(Dimension::Ua),
    Column::RuleName,
];

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
pub(super) enum Predicate {
    Exact(Vec<String>),
    Contains(Vec<String>),
    Wildcard(Vec<Vec<char>>),
    Cidr(Vec<IpNet>),
}

impl Predicate {
    pub(super) fn matches(&self, value: &str) -> bool {
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
    pub(super) terms: Vec<String>,
    pub(super) filters: Vec<(Dimension, Predicate)>,
    pub group_by: Vec<Dimension>,
    pub buckets: usize,
    pub page: usize,
    pub page_size: usize,
}

/// Terms of `query`: each one is matched against every distinct value of five
/// columns, so their number bounds the work and memory of a search.
pub(crate) const MAX_QUERY_TERMS: usize = 16;
/// Filters of one search, and values of one filter.
pub(crate) const MAX_FILTERS: usize = 32;
pub(crate) const MAX_FILTER_VALUES: usize = 256;
/// Characters of one term or filter value.
pub(crate) const MAX_TERM_CHARS: usize = 1024;

/// Checks every rule of the spec; `now` is Unix milliseconds.
pub fn validate(request: &EventLogsSearchRequest, now: i64) -> Result<ValidSearch, SearchError> {
    check_window(request, now)?;
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
    let filter_count = request.filters.as_ref().map_or(0, Vec::len);
    if filter_count > MAX_FILTERS {
        return Err(invalid(
            "filters",
            format!("at most {MAX_FILTERS} filters are allowed, got {filter_count}"),
        ));
    }
    let group_by = group_by(request)?;
    let filters = request
        .filters
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, filter)| resolved(i, filter))
        .collect::<Result<Vec<_>, _>>()?;
    let terms = query_terms(request)?;
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

/// The window `[from, to)`: not empty, ending at most 5 minutes ahead of `now` and
/// within the last 72 hours.
fn check_window(request: &EventLogsSearchRequest, now: i64) -> Result<(), SearchError> {
    if request.to <= request.from {
        return Err(invalid("to", "must be after `from`"));
    }
    if request.to > now.saturating_add(MAX_FUTURE_MS) {
        return Err(invalid("to", "must not be more than 5 minutes in the future"));
    }
    if request.to < now.saturating_sub(MAX_AGE_MS) {
        return Err(invalid("to", "must be within the last 72 hours"));
    }
    Ok(())
}

/// The dimensions to group by, each named once.
fn group_by(request: &EventLogsSearchRequest) -> Result<Vec<Dimension>, SearchError> {
    let group_by = request.group_by.clone().unwrap_or_default();
    for (i, dimension) in group_by.iter().enumerate() {
        if group_by[..i].contains(dimension) {
            return Err(invalid(
                format!("groupBy[{i}]"),
                format!("dimension `{dimension}` is repeated"),
            ));
        }
    }
    Ok(group_by)
}

/// Filter `i` as its field and the predicate its values resolve to: a field, an op and
/// at most [`MAX_FILTER_VALUES`] values of at most [`MAX_TERM_CHARS`] characters each;
/// `cidr` on `ip` only, with IP prefixes.
fn resolved(i: usize, filter: &EventLogsFilter) -> Result<(Dimension, Predicate), SearchError> {
    let member = |name: &str| format!("filters[{i}].{name}");
    let field = filter.field.ok_or_else(|| invalid(member("field"), "is required"))?;
    let op = filter.op.ok_or_else(|| invalid(member("op"), "is required"))?;
    let values = filter.value.as_deref().unwrap_or_default();
    if values.is_empty() {
        return Err(invalid(member("value"), "must hold at least one value"));
    }
    if values.len() > MAX_FILTER_VALUES {
        return Err(invalid(
            member("value"),
            format!("at most {MAX_FILTER_VALUES} values are allowed, got {}", values.len()),
        ));
    }
    if let Some(j) = values.iter().position(|v| v.chars().count() > MAX_TERM_CHARS) {
        return Err(invalid(
            format!("filters[{i}].value[{j}]"),
            format!("is longer than {MAX_TERM_CHARS} characters"),
        ));
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
        FilterOp::Cidr => Predicate::Cidr(networks(i, values)?),
    };
    Ok((field, predicate))
}

/// The values of filter `i`, each an IP prefix or address.
fn networks(i: usize, values: &[String]) -> Result<Vec<IpNet>, SearchError> {
    values
        .iter()
        .enumerate()
        .map(|(j, v)| {
            parse_network(v)
                .ok_or_else(|| invalid(format!("filters[{i}].value[{j}]"), format!("`{v}` is not an IP prefix")))
        })
        .collect()
}

/// The terms of `query`, case-folded: at most [`MAX_QUERY_TERMS`], each of at most
/// [`MAX_TERM_CHARS`] characters.
fn query_terms(request: &EventLogsSearchRequest) -> Result<Vec<String>, SearchError> {
    let terms: Vec<String> = request
        .query
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    if terms.len() > MAX_QUERY_TERMS {
        return Err(invalid(
            "query",
            format!("at most {MAX_QUERY_TERMS} terms are allowed, got {}", terms.len()),
        ));
    }
    if terms.iter().any(|t| t.chars().count() > MAX_TERM_CHARS) {
        return Err(invalid(
            "query",
            format!("a term is longer than {MAX_TERM_CHARS} characters"),
        ));
    }
    Ok(terms)
}
