//! Every platform operation: its name, whether it writes, its quota lane and the
//! largest answer it may bring.

use super::limiter::Lane;

/// Every platform operation, named for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    SearchEvents,
    ListAccessLists,
    UpdateAccessList,
    ListRateLimits,
    CompleteCertificate,
    GetApp,
    QueryLogs,
    GetLogFile,
}

impl Operation {
    pub const ALL: [Operation; 8] = [
        Operation::SearchEvents,
        Operation::ListAccessLists,
        Operation::UpdateAccessList,
        Operation::ListRateLimits,
        Operation::CompleteCertificate,
        Operation::GetApp,
        Operation::QueryLogs,
        Operation::GetLogFile,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Operation::SearchEvents => "search_events",
            Operation::ListAccessLists => "list_access_lists",
            Operation::UpdateAccessList => "update_access_list",
            Operation::ListRateLimits => "list_rate_limits",
            Operation::CompleteCertificate => "complete_certificate",
            Operation::GetApp => "get_app",
            Operation::QueryLogs => "query_logs",
            Operation::GetLogFile => "get_log_file",
        }
    }

    /// The largest answer one call may bring, for the page size asked (`None`: the
    /// operation has no page size, or the platform's default). One object or one list
    /// page takes a few MiB at most; a page of logs or events is bounded by its entries.
    pub fn answer_limit(self, page_size: Option<u64>) -> usize {
        const ENVELOPE: usize = 1 << 20;
        let per_page = |per_entry: usize, default: u64, most: u64| {
            let entries = usize::try_from(page_size.unwrap_or(default).min(most)).unwrap_or(usize::MAX);
            ENVELOPE.saturating_add(entries.saturating_mul(per_entry))
        };
        match self {
            Operation::UpdateAccessList | Operation::CompleteCertificate => ENVELOPE,
            Operation::GetApp | Operation::ListAccessLists | Operation::ListRateLimits => 4 << 20,
            // An event row or a log entry: a URL, a user agent, headers; 16 KiB is ample.
            Operation::SearchEvents | Operation::QueryLogs => per_page(16 << 10, 100, 1000),
            // The legacy log file: a whole day, for `edgectl logs --v1` only.
            Operation::GetLogFile => 64 << 20,
        }
    }

    /// The most JSON objects and arrays one answer may hold, for the page size asked: a
    /// decoded object takes up to a few hundred bytes whatever its text, so `{}` repeated
    /// through an answer would decode into a hundred times its size. Real answers hold a
    /// few per entry.
    pub fn most_containers(self, page_size: Option<u64>) -> usize {
        const ENVELOPE: usize = 1024;
        const PER_ENTRY: usize = 64;
        const WHOLE: usize = 16 << 10;
        let per_page = |default: u64, most: u64| {
            let entries = usize::try_from(page_size.unwrap_or(default).min(most)).unwrap_or(usize::MAX);
            ENVELOPE.saturating_add(entries.saturating_mul(PER_ENTRY))
        };
        match self {
            Operation::SearchEvents | Operation::QueryLogs => per_page(100, 1000),
            Operation::ListRateLimits => per_page(10, 1000),
            Operation::UpdateAccessList
            | Operation::CompleteCertificate
            | Operation::GetApp
            | Operation::ListAccessLists
            | Operation::GetLogFile => WHOLE,
        }
    }

    /// The operation a request makes, from its method and path.
    pub fn of(method: &http::Method, path: &str) -> Option<Self> {
        let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
        let operation = match segments.as_slice() {
            ["shield", "event-logs", _, "search"] => Operation::SearchEvents,
            ["shield", "shield-zone", _, "access-lists"] => Operation::ListAccessLists,
            ["shield", "shield-zone", _, "access-lists", "configurations", _] => Operation::UpdateAccessList,
            ["shield", "rate-limits", _] => Operation::ListRateLimits,
            ["pullzone", "completeExternalHttpCertificate"] => Operation::CompleteCertificate,
            ["mc", "apps", _] => Operation::GetApp,
            ["v2", "pullzones", _, "logs"] => Operation::QueryLogs,
            [_, file] if file.ends_with(".log") => Operation::GetLogFile,
            _ => return None,
        };
        (*method == operation.method()).then_some(operation)
    }

    pub fn method(self) -> http::Method {
        match self {
            Operation::SearchEvents | Operation::CompleteCertificate => http::Method::POST,
            Operation::UpdateAccessList => http::Method::PATCH,
            _ => http::Method::GET,
        }
    }

    /// The path with its parameters named, as the API reference writes it.
    pub fn template(self) -> &'static str {
        match self {
            Operation::SearchEvents => "/shield/event-logs/{shieldZoneId}/search",
            Operation::ListAccessLists => "/shield/shield-zone/{shieldZoneId}/access-lists",
            Operation::UpdateAccessList => "/shield/shield-zone/{shieldZoneId}/access-lists/configurations/{id}",
            Operation::ListRateLimits => "/shield/rate-limits/{shieldZoneId}",
            Operation::CompleteCertificate => "/pullzone/completeExternalHttpCertificate",
            Operation::GetApp => "/mc/apps/{appId}",
            Operation::QueryLogs => "/v2/pullzones/{pullZoneId}/logs",
            Operation::GetLogFile => "/{MM-dd-yy}/{pullZoneId}.log",
        }
    }

    /// Whether the operation is served by the logging API's base URL.
    pub fn is_logging(self) -> bool {
        matches!(self, Operation::QueryLogs | Operation::GetLogFile)
    }

    /// Whether the operation changes the platform.
    pub fn is_write(self) -> bool {
        matches!(self, Operation::UpdateAccessList | Operation::CompleteCertificate)
    }

    /// The quota line of the operation: the access-list reads that precede a PATCH or
    /// a restore go with the writes, ahead of the observe-only polls.
    pub fn lane(self) -> Lane {
        match self {
            Operation::ListAccessLists | Operation::UpdateAccessList | Operation::CompleteCertificate => Lane::Change,
            Operation::SearchEvents
            | Operation::ListRateLimits
            | Operation::GetApp
            | Operation::QueryLogs
            | Operation::GetLogFile => Lane::Poll,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_holds_every_operation_once() {
        for (index, operation) in Operation::ALL.into_iter().enumerate() {
            // A new variant fails to compile here until it has its place in `ALL`.
            let place = match operation {
                Operation::SearchEvents => 0,
                Operation::ListAccessLists => 1,
                Operation::UpdateAccessList => 2,
                Operation::ListRateLimits => 3,
                Operation::CompleteCertificate => 4,
                Operation::GetApp => 5,
                Operation::QueryLogs => 6,
                Operation::GetLogFile => 7,
            };
            assert_eq!(place, index, "{}", operation.as_str());
        }
    }

    #[test]
    fn a_request_is_told_its_operation_by_method_and_path() {
        use http::Method;
        let cases = [
            (
                Method::POST,
                "/shield/event-logs/7/search",
                Some(Operation::SearchEvents),
            ),
            (
                Method::GET,
                "/shield/shield-zone/7/access-lists",
                Some(Operation::ListAccessLists),
            ),
            (
                Method::PATCH,
                "/shield/shield-zone/7/access-lists/configurations/3",
                Some(Operation::UpdateAccessList),
            ),
            (Method::GET, "/shield/rate-limits/7", Some(Operation::ListRateLimits)),
            (
                Method::POST,
                "/pullzone/completeExternalHttpCertificate",
                Some(Operation::CompleteCertificate),
            ),
            (Method::GET, "/mc/apps/app-1", Some(Operation::GetApp)),
            (Method::GET, "/v2/pullzones/9/logs", Some(Operation::QueryLogs)),
            (Method::GET, "/11-20-26/9.log", Some(Operation::GetLogFile)),
            (Method::DELETE, "/mc/apps/app-1", None),
            (Method::GET, "/shield/event-logs/7/search", None),
            (Method::GET, "/_sim/state", None),
            (Method::GET, "/", None),
        ];
        for (method, path, expected) in cases {
            assert_eq!(Operation::of(&method, path), expected, "{method} {path}");
        }
    }
}
