//! Shield operations: event-log search, access lists, rate limits.

use futures::Stream;
use reqwest::Method;

use super::client::{Api, EdgeClient, WalkLimits, paginate};
use super::error::ApiError;
use super::models::shield::{
    AccessListConfiguration, AccessListConfigurationPatch, AccessListConfigurationResponse, AccessListsResponse,
    EventLogsSearchRequest, EventLogsSearchResponse, RateLimitListResponse, RateLimitRule,
};
use super::operation::Operation;

/// Rules per page when walking all rate limits (the platform default).
pub(crate) const RATE_LIMIT_PAGE_SIZE: i64 = 10;

/// A zone's rate-limit rules are collected whole: 10,000 rules, 16 MiB of answers.
pub(crate) const RATE_LIMIT_WALK: WalkLimits = WalkLimits {
    pages: 1_000,
    bytes: 16 << 20,
};

impl EdgeClient {
    /// `POST /shield/event-logs/{zone}/search`.
    pub async fn search_events(
        &self,
        shield_zone_id: i64,
        request: &EventLogsSearchRequest,
    ) -> Result<EventLogsSearchResponse, ApiError> {
        let path = format!("/shield/event-logs/{shield_zone_id}/search");
        let page_size = request.page_size.and_then(|size| u64::try_from(size).ok());
        self.send_json_sized(Operation::SearchEvents, Api::Main, page_size, || {
            self.request(Method::POST, Api::Main, &path).json(request)
        })
        .await
        .map(|(response, _)| response)
    }

    /// `GET /shield/shield-zone/{zone}/access-lists`.
    pub async fn access_lists(&self, shield_zone_id: i64) -> Result<AccessListsResponse, ApiError> {
        let path = format!("/shield/shield-zone/{shield_zone_id}/access-lists");
        self.send_json(Operation::ListAccessLists, Api::Main, || {
            self.request(Method::GET, Api::Main, &path)
        })
        .await
    }

    /// `PATCH /shield/shield-zone/{zone}/access-lists/configurations/{configurationId}`;
    /// returns the configuration as the platform reports it (members it leaves out or
    /// sends as null are `None`: see [`AccessListConfiguration::or_requested`]).
    pub async fn update_access_list(
        &self,
        shield_zone_id: i64,
        configuration_id: i64,
        patch: &AccessListConfigurationPatch,
    ) -> Result<AccessListConfiguration, ApiError> {
        let path = format!("/shield/shield-zone/{shield_zone_id}/access-lists/configurations/{configuration_id}");
        let response: AccessListConfigurationResponse = self
            .send_json(Operation::UpdateAccessList, Api::Main, || {
                self.request(Method::PATCH, Api::Main, &path).json(patch)
            })
            .await?;
        Ok(response.data.unwrap_or_default())
    }

    /// One page (1-based) of `GET /shield/rate-limits/{zone}`.
    pub async fn rate_limits_page(
        &self,
        shield_zone_id: i64,
        page: i64,
        per_page: i64,
    ) -> Result<RateLimitListResponse, ApiError> {
        self.rate_limits_page_sized(shield_zone_id, page, per_page)
            .await
            .map(|(response, _)| response)
    }

    async fn rate_limits_page_sized(
        &self,
        shield_zone_id: i64,
        page: i64,
        per_page: i64,
    ) -> Result<(RateLimitListResponse, usize), ApiError> {
        if page < 1 || per_page < 1 {
            return Err(ApiError::InvalidInput(format!(
                "rate-limit pages are 1-based with perPage >= 1 (got page {page}, perPage {per_page})"
            )));
        }
        let path = format!("/shield/rate-limits/{shield_zone_id}");
        let query = [("page", page), ("perPage", per_page)];
        let page_size = u64::try_from(per_page).ok();
        self.send_json_sized(Operation::ListRateLimits, Api::Main, page_size, || {
            self.request(Method::GET, Api::Main, &path).query(&query)
        })
        .await
    }

    /// Every rate-limit rule of the zone, walking all pages.
    pub fn rate_limits(&self, shield_zone_id: i64) -> impl Stream<Item = Result<RateLimitRule, ApiError>> + Send + '_ {
        paginate(
            move |page: i64| async move {
                let (response, size) = self
                    .rate_limits_page_sized(shield_zone_id, page, RATE_LIMIT_PAGE_SIZE)
                    .await?;
                let next = response
                    .page
                    .next_page
                    .filter(|&next| next > page && !response.data.is_empty());
                Ok((response.data, next, size))
            },
            1,
            RATE_LIMIT_WALK,
        )
    }

    /// Every rate-limit rule of the zone, collected.
    pub async fn all_rate_limits(&self, shield_zone_id: i64) -> Result<Vec<RateLimitRule>, ApiError> {
        use futures::TryStreamExt;
        self.rate_limits(shield_zone_id).try_collect().await
    }
}
