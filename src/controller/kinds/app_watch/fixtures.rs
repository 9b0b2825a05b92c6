//! What the tests of this kind start from.

use crate::api::models::shield::{EventGroup, EventLogsSearchResponse, GroupContext};
use crate::controller::kinds::app_watch::resource::SecurityEventsWatch;

pub(super) fn watch(threshold: i64) -> SecurityEventsWatch {
    SecurityEventsWatch {
        window: "1h".into(),
        query: None,
        filters: Vec::new(),
        group_by: Vec::new(),
        top: 2,
        warn_threshold: threshold,
    }
}

pub(super) fn grouped() -> EventLogsSearchResponse {
    let group = |rule: &str, ip: &str, count: i64| EventGroup {
        key: Some(
            [
                ("ruleId".to_string(), rule.to_string()),
                ("ip".to_string(), ip.to_string()),
            ]
            .into(),
        ),
        count,
        first_seen: 0,
        last_seen: 0,
        context: Some(GroupContext {
            blocked: count,
            ..GroupContext::default()
        }),
        sparkline: None,
    };
    EventLogsSearchResponse {
        rows: None,
        groups: Some(vec![
            group("942100", "192.0.2.1", 70),
            group("941100", "192.0.2.2", 20),
            group("x", "y", 1),
        ]),
        total: 3,
        total_pages: 1,
        page: 0,
        error_response: None,
    }
}
