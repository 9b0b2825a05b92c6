//! CDN logging operations: v2 queries (one page or every page) and v1 day files.

use chrono::{DateTime, NaiveDate, Utc};
use futures::Stream;
use reqwest::Method;

use super::client::{Api, EdgeClient, WalkLimits, paginate};
use super::error::ApiError;
use super::models::logging::{LogEntry, LogsResponse, SortOrder, parse_v1_file};
use super::operation::Operation;

/// A walk over log pages streams its entries: it may be long, and holds one page at a
/// time.
pub(crate) const LOG_WALK: WalkLimits = WalkLimits {
    pages: 10_000,
    bytes: 4 << 30,
};

/// Parameters of `GET /v2/pullzones/{id}/logs`; `None` leaves the platform default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogQuery {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// Status codes or classes (`404`, `5xx`).
    pub status: Vec<String>,
    pub cache_status: Vec<String>,
    pub country: Option<String>,
    pub edge_location: Option<String>,
    pub remote_ip: Option<String>,
    pub url_contains: Option<String>,
    pub user_agent_contains: Option<String>,
    pub referer_contains: Option<String>,
    pub search: Option<String>,
    pub request_id: Option<String>,
    pub include_origin_shield: Option<bool>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub order: Option<SortOrder>,
}

impl LogQuery {
    pub fn params(&self) -> Vec<(&'static str, String)> {
        let mut params = Vec::new();
        let time = |t: &DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut push = |name: &'static str, value: Option<String>| {
            if let Some(value) = value {
                params.push((name, value));
            }
        };
        push("from", self.from.as_ref().map(time));
        push("to", self.to.as_ref().map(time));
        push("status", (!self.status.is_empty()).then(|| self.status.join(",")));
        push(
            "cacheStatus",
            (!self.cache_status.is_empty()).then(|| self.cache_status.join(",")),
        );
        push("country", self.country.clone());
        push("edgeLocation", self.edge_location.clone());
        push("remoteIp", self.remote_ip.clone());
        push("urlContains", self.url_contains.clone());
        push("userAgentContains", self.user_agent_contains.clone());
        push("refererContains", self.referer_contains.clone());
        push("search", self.search.clone());
        push("requestId", self.request_id.clone());
        push("includeOriginShield", self.include_origin_shield.map(|b| b.to_string()));
        push("limit", self.limit.map(|n| n.to_string()));
        push("offset", self.offset.map(|n| n.to_string()));
        push(
            "order",
            self.order.map(|o| match o {
                SortOrder::Asc => "asc".to_string(),
                SortOrder::Desc => "desc".to_string(),
            }),
        );
        params
    }
}

impl EdgeClient {
    /// One page of `GET /v2/pullzones/{id}/logs`.
    pub async fn query_logs(&self, pull_zone_id: i64, query: &LogQuery) -> Result<LogsResponse, ApiError> {
        self.query_logs_sized(pull_zone_id, query).await.map(|(page, _)| page)
    }

    async fn query_logs_sized(&self, pull_zone_id: i64, query: &LogQuery) -> Result<(LogsResponse, usize), ApiError> {
        let api = Api::Logging { pull_zone_id };
        let path = format!("/v2/pullzones/{pull_zone_id}/logs");
        let params = query.params();
        self.send_json_sized(Operation::QueryLogs, api, query.limit, || {
            self.request(Method::GET, api, &path).query(&params)
        })
        .await
    }

    /// Every entry matching `query`, following `offset` while `hasMore` says so.
    pub fn logs(
        &self,
        pull_zone_id: i64,
        query: LogQuery,
    ) -> impl Stream<Item = Result<LogEntry, ApiError>> + Send + '_ {
        let start = query.offset.unwrap_or(0);
        paginate(
            move |offset: u64| {
                let page_query = LogQuery {
                    offset: Some(offset),
                    ..query.clone()
                };
                async move {
                    let (page, size) = self.query_logs_sized(pull_zone_id, &page_query).await?;
                    let next = offset
                        .checked_add(page.pagination.returned)
                        .filter(|_| page.pagination.has_more && page.pagination.returned > 0);
                    Ok((page.data, next, size))
                }
            },
            start,
            LOG_WALK,
        )
    }

    /// The legacy v1 file of one UTC day, parsed, oldest first (the platform sends it
    /// newest first unless asked).
    pub async fn log_file(&self, pull_zone_id: i64, day: NaiveDate) -> Result<Vec<LogEntry>, ApiError> {
        let api = Api::Logging { pull_zone_id };
        let path = format!("/{}/{pull_zone_id}.log", day.format("%m-%d-%y"));
        let response = self
            .send(Operation::GetLogFile, api, || self.request(Method::GET, api, &path))
            .await?;
        let answer = self.body(response, Operation::GetLogFile.answer_limit(None)).await?;
        let mut entries =
            parse_v1_file(&String::from_utf8_lossy(&answer.bytes)).map_err(|e| ApiError::Decode(e.to_string()))?;
        entries.sort_by(|a, b| (a.timestamp, &a.request_id).cmp(&(b.timestamp, &b.request_id)));
        Ok(entries)
    }
}
