//! The page of a search's answer: which matches it holds, and its envelope.

use super::validate::ValidSearch;
use crate::api::models::GenericRequestResponse;
use crate::api::models::shield::EventLogsSearchResponse;

/// The first match of the page and the one after its last.
pub(super) fn page_bounds(search: &ValidSearch) -> (usize, usize) {
    let start = search.page.saturating_mul(search.page_size);
    (start, start.saturating_add(search.page_size))
}

/// The answer's envelope for `total` matches, without rows or groups.
pub(super) fn response(search: &ValidSearch, total: usize) -> EventLogsSearchResponse {
    EventLogsSearchResponse {
        rows: None,
        groups: None,
        total: total as i64,
        total_pages: i32::try_from(total.div_ceil(search.page_size)).unwrap_or(i32::MAX),
        page: i32::try_from(search.page).unwrap_or(i32::MAX),
        error_response: Some(GenericRequestResponse::ok()),
    }
}
