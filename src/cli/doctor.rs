//! `edgectl doctor`: whether the platform can be reached and used with these URLs,
//! credentials, CAs and proxy, one check a line, before anything is deployed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::args::DoctorArgs;
use crate::api::probe::Probe;
use crate::api::transport::{without_password, without_userinfo};
use crate::api::{ApiError, EdgeClient, LogQuery};

/// How long a name may take to resolve.
const RESOLVE_WITHIN: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    Ok,
    Fail,
    Skip,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    pub check: String,
    pub verdict: Verdict,
    pub detail: String,
}

fn check(name: &str, verdict: Verdict, detail: impl Into<String>) -> Check {
    Check {
        check: name.to_string(),
        verdict,
        detail: detail.into(),
    }
}

/// Every check, in order; a check whose prerequisite failed is skipped.
pub(crate) async fn examine(platform: &EdgeClient, logging: &EdgeClient, args: &DoctorArgs) -> Vec<Check> {
    let config = platform.config();
    let mut checks = vec![proxy(config)];
    let mut hosts = vec![config.base_url.clone()];
    if config.logging_url != config.base_url {
        hosts.push(config.logging_url.clone());
    }
    for url in &hosts {
        checks.push(resolve(url).await);
    }
    if checks.iter().any(|c| c.verdict == Verdict::Fail) {
        checks.push(check("platform", Verdict::Skip, "not tried: a name does not resolve"));
        return checks;
    }
    let first = platform.probe(false).await;
    checks.extend(first_contact(&config.base_url, &first));
    let reached = checks.iter().all(|c| c.verdict != Verdict::Fail);
    if let Ok(probe) = &first {
        checks.push(clock(Utc::now(), probe.server_time, args.max_clock_skew.into()));
    }
    if !reached {
        checks.push(check("platform", Verdict::Skip, "not tried: the API is not usable"));
        return checks;
    }
    checks.push(logging_reached(
        &without_userinfo(&logging.config().logging_url),
        &logging.probe(true).await,
    ));
    for zone in &args.zones {
        checks.push(match platform.access_lists(*zone).await {
            Ok(lists) => check(
                &format!("zone {zone}"),
                Verdict::Ok,
                format!(
                    "visible: {} managed and {} custom access lists",
                    lists.managed_lists.len(),
                    lists.custom_lists.len()
                ),
            ),
            Err(error) => refused(&format!("zone {zone}"), Answerer::Main, &error),
        });
    }
    for pull_zone in &args.pull_zones {
        let query = LogQuery {
            limit: Some(1),
            ..LogQuery::default()
        };
        checks.push(match logging.query_logs(*pull_zone, &query).await {
            Ok(_) => check(
                &format!("pull zone {pull_zone}"),
                Verdict::Ok,
                "visible: its logs are readable",
            ),
            Err(error) => refused(&format!("pull zone {pull_zone}"), Answerer::Logging, &error),
        });
    }
    for app in &args.apps {
        checks.push(match platform.get_app(app).await {
            Ok(found) => check(
                &format!("app {app}"),
                Verdict::Ok,
                format!("visible: {}, status {}", found.name, found.status.as_str()),
            ),
            Err(error) => refused(&format!("app {app}"), Answerer::Main, &error),
        });
    }
    checks
}

/// Which API answered: a status means what that API's error table says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answerer {
    Main,
    Logging,
}

/// What an HTTP status of `answerer` means, in the contract's words.
fn meaning(answerer: Answerer, status: u16) -> &'static str {
    match (answerer, status) {
        (_, 200..=299) => "answered",
        (Answerer::Logging, 400) => "invalid_request: a query parameter failed validation",
        (Answerer::Logging, 401) => "unauthorized: no credentials were sent",
        (Answerer::Logging, 403) => "forbidden: the key is refused, or the Pull Zone is suspended or disabled",
        (Answerer::Logging, 404) => "logging_disabled: logging is not enabled for this Pull Zone",
        (Answerer::Logging, 429) => "rate_limited: the Pull Zone's 30 requests in 10 s are used up",
        (Answerer::Main, 400) => "rejected: the request failed validation",
        (Answerer::Main, 401) => "unauthorized: the key is refused",
        (Answerer::Main, 403) => "forbidden: the key may not read this",
        (Answerer::Main, 404) => "not found: the account of this key has none by that id",
        (Answerer::Main, 429) => "rate limited: too many requests",
        (_, 500..=599) => "the platform failed",
        _ => "a status the platform's API does not document",
    }
}

/// A resource check the platform refused: what the status means, then its words. A
/// rate limit leaves the check undecided.
fn refused(name: &str, answerer: Answerer, error: &ApiError) -> Check {
    let Some(status) = error.status() else {
        return check(name, Verdict::Fail, error.to_string());
    };
    let words = error
        .platform_message()
        .map(|m| m.to_string())
        .filter(|m| !m.is_empty())
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    let detail = format!("HTTP {status}, {}{words}", meaning(answerer, status));
    match error.retry_after() {
        _ if status != 429 => check(name, Verdict::Fail, detail),
        Some(wait) => check(
            name,
            Verdict::Skip,
            format!("not checked: {detail}; try again in {} s", wait.as_secs()),
        ),
        None => check(name, Verdict::Skip, format!("not checked: {detail}")),
    }
}

/// The logging API's answer to the probe, a read of Pull Zone 0, which no account has:
/// it proves the URL and the TLS; a 403 or 404 there says nothing of the key.
fn logging_reached(url: &str, outcome: &Result<Probe, ApiError>) -> Check {
    const NAME: &str = "logging API";
    let probe = match outcome {
        Ok(probe) => probe,
        Err(error) => return refused(NAME, Answerer::Logging, error),
    };
    let status = probe.status;
    let meant = meaning(Answerer::Logging, status);
    match status {
        200..=299 => check(NAME, Verdict::Ok, format!("{url} answers (HTTP {status})")),
        403 | 404 | 429 => check(
            NAME,
            Verdict::Ok,
            format!(
                "{url} reached: HTTP {status} ({meant}) for Pull Zone 0, which no account has, so it proves the \
                 URL and the TLS, not the key; name a Pull Zone with --pull-zone to check the key"
            ),
        ),
        _ => check(NAME, Verdict::Fail, format!("{url}: HTTP {status}, {meant}")),
    }
}

fn proxy(config: &crate::api::ClientConfig) -> Check {
    match config.transport.https_proxy.resolve(|name| std::env::var(name).ok()) {
        Some(url) => check(
            "proxy",
            Verdict::Ok,
            format!(
                "https goes through {} (CONNECT; NO_PROXY hosts go direct); plain http never does",
                without_password(&url)
            ),
        ),
        None => check("proxy", Verdict::Skip, "none: every request goes direct"),
    }
}

async fn resolve(url: &str) -> Check {
    let Some((host, port)) = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| Some((u.host_str()?.to_string(), u.port_or_known_default()?)))
    else {
        return check("resolve", Verdict::Fail, format!("{}: no host", without_userinfo(url)));
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return check("resolve", Verdict::Ok, format!("{host}: an address"));
    }
    match tokio::time::timeout(RESOLVE_WITHIN, tokio::net::lookup_host((host.as_str(), port))).await {
        Ok(Ok(addresses)) => match addresses.count() {
            1 => check("resolve", Verdict::Ok, format!("{host}: 1 address")),
            count => check("resolve", Verdict::Ok, format!("{host}: {count} addresses")),
        },
        Ok(Err(error)) => check("resolve", Verdict::Fail, format!("{host}: {error}")),
        Err(_) => check(
            "resolve",
            Verdict::Fail,
            format!("{host}: no answer within {} s", RESOLVE_WITHIN.as_secs()),
        ),
    }
}

/// What the first request tells of the connection, the TLS and the key.
fn first_contact(base_url: &str, outcome: &Result<Probe, ApiError>) -> Vec<Check> {
    let https = base_url.starts_with("https://");
    let tls_ok = || {
        if https {
            check("tls", Verdict::Ok, "the certificate is trusted and valid for the host")
        } else {
            check("tls", Verdict::Skip, "plain http")
        }
    };
    let shown = without_userinfo(base_url);
    let connected = check("connect", Verdict::Ok, &shown);
    match outcome {
        Ok(probe) => {
            let status = probe.status;
            let meant = meaning(Answerer::Main, status);
            let key = match status {
                404 => check(
                    "access key",
                    Verdict::Ok,
                    format!("accepted: an application no account has answered HTTP 404 ({meant})"),
                ),
                200..=299 => check("access key", Verdict::Ok, format!("accepted (HTTP {status})")),
                429 => check("access key", Verdict::Skip, format!("not proven: HTTP 429, {meant}")),
                _ => check(
                    "access key",
                    Verdict::Fail,
                    format!("not proven: HTTP {status}, {meant}"),
                ),
            };
            vec![connected, tls_ok(), key]
        }
        Err(refused @ (ApiError::Unauthorized(_) | ApiError::Forbidden(_))) => vec![
            connected,
            tls_ok(),
            check("access key", Verdict::Fail, format!("refused: {refused}")),
        ],
        Err(ApiError::Tls { host, problem }) => {
            vec![connected, check("tls", Verdict::Fail, format!("{host}: {problem}"))]
        }
        Err(error) => vec![check("connect", Verdict::Fail, format!("{shown}: {error}"))],
    }
}

/// The platform's clock against this machine's: log windows, token expiries and the
/// times in status depend on both agreeing.
fn clock(local: DateTime<Utc>, server: Option<DateTime<Utc>>, most: Duration) -> Check {
    let Some(server) = server else {
        return check("clock", Verdict::Skip, "the platform sent no Date header");
    };
    let skew = (local - server).abs().to_std().unwrap_or(Duration::MAX);
    let detail = format!(
        "this machine's clock is {} s {} the platform's",
        skew.as_secs(),
        if local >= server { "ahead of" } else { "behind" }
    );
    if skew > most {
        check(
            "clock",
            Verdict::Fail,
            format!("{detail} (at most {} s)", most.as_secs()),
        )
    } else {
        check("clock", Verdict::Ok, detail)
    }
}

/// The report as lines: verdict, check, detail.
pub(crate) fn render(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.check.len()).max().unwrap_or(0);
    checks
        .iter()
        .map(|c| {
            let verdict = match c.verdict {
                Verdict::Ok => "ok  ",
                Verdict::Fail => "FAIL",
                Verdict::Skip => "skip",
            };
            format!("{verdict}  {:<width$}  {}\n", c.check, c.detail)
        })
        .collect()
}

/// Exit 1 when any check failed.
pub(crate) fn exit_code(checks: &[Check]) -> u8 {
    u8::from(checks.iter().any(|c| c.verdict == Verdict::Fail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PlatformMessage;

    fn verdicts(checks: &[Check]) -> Vec<(&str, Verdict)> {
        checks.iter().map(|c| (c.check.as_str(), c.verdict)).collect()
    }

    #[test]
    fn the_first_answer_tells_connection_tls_and_key_apart() {
        let answered = Ok(Probe {
            status: 404,
            server_time: None,
        });
        assert_eq!(
            verdicts(&first_contact("https://api.example.net", &answered)),
            [
                ("connect", Verdict::Ok),
                ("tls", Verdict::Ok),
                ("access key", Verdict::Ok)
            ]
        );
        assert_eq!(
            verdicts(&first_contact("http://127.0.0.1:8080", &answered))[1],
            ("tls", Verdict::Skip)
        );
        let refused = Err(ApiError::Unauthorized(PlatformMessage::default()));
        assert_eq!(
            verdicts(&first_contact("https://api.example.net", &refused))[2],
            ("access key", Verdict::Fail)
        );
        let untrusted = Err(ApiError::Tls {
            host: "api.example.net:443".into(),
            problem: "not trusted".into(),
        });
        let checks = first_contact("https://api.example.net", &untrusted);
        assert_eq!(verdicts(&checks)[1], ("tls", Verdict::Fail));
        assert_eq!(checks[1].detail, "api.example.net:443: not trusted");
        let down = Err(ApiError::Transport("connection refused".into()));
        assert_eq!(
            verdicts(&first_contact("https://api.example.net", &down)),
            [("connect", Verdict::Fail)]
        );
    }

    #[test]
    fn the_key_is_proven_only_by_an_answer_that_means_it() {
        let key = |status: u16| {
            let checks = first_contact(
                "https://api.example.net",
                &Ok(Probe {
                    status,
                    server_time: None,
                }),
            );
            (checks[2].verdict, checks[2].detail.clone())
        };
        assert_eq!(key(404).0, Verdict::Ok);
        assert!(key(404).1.contains("no account has"), "{}", key(404).1);
        assert_eq!(key(200).0, Verdict::Ok);
        assert_eq!(key(429).0, Verdict::Skip);
        let failed = key(503);
        assert_eq!(failed.0, Verdict::Fail);
        assert_eq!(failed.1, "not proven: HTTP 503, the platform failed");
        assert_eq!(key(302).0, Verdict::Fail);
    }

    #[test]
    fn the_logging_probe_says_what_its_status_means_for_a_pull_zone_no_account_has() {
        let url = "https://logging.example.net";
        let line = |outcome: Result<Probe, ApiError>| {
            let checked = logging_reached(url, &outcome);
            (checked.verdict, checked.detail)
        };
        let answered = |status: u16| {
            Ok(Probe {
                status,
                server_time: None,
            })
        };
        assert_eq!(line(answered(200)), (Verdict::Ok, format!("{url} answers (HTTP 200)")));
        let forbidden = line(answered(403));
        assert_eq!(forbidden.0, Verdict::Ok);
        assert!(
            forbidden
                .1
                .contains("HTTP 403 (forbidden: the key is refused, or the Pull Zone is suspended or disabled)")
                && forbidden.1.contains("Pull Zone 0, which no account has")
                && forbidden.1.contains("not the key"),
            "{}",
            forbidden.1
        );
        assert_eq!(line(answered(404)).0, Verdict::Ok);
        assert_eq!(
            line(answered(500)),
            (Verdict::Fail, format!("{url}: HTTP 500, the platform failed"))
        );
        assert_eq!(
            line(answered(400)),
            (
                Verdict::Fail,
                format!("{url}: HTTP 400, invalid_request: a query parameter failed validation")
            )
        );
        let unauthorized = line(Err(ApiError::Unauthorized(PlatformMessage::default())));
        assert_eq!(
            unauthorized,
            (Verdict::Fail, "HTTP 401, unauthorized: no credentials were sent".into())
        );
    }

    #[test]
    fn a_refused_resource_names_what_its_status_means() {
        let words = PlatformMessage {
            message: "Pull Zone 7 is suspended".into(),
            ..PlatformMessage::default()
        };
        let suspended = refused("pull zone 7", Answerer::Logging, &ApiError::Forbidden(words));
        assert_eq!(suspended.verdict, Verdict::Fail);
        assert_eq!(
            suspended.detail,
            "HTTP 403, forbidden: the key is refused, or the Pull Zone is suspended or disabled (Pull Zone 7 is suspended)"
        );
        let disabled = refused(
            "pull zone 7",
            Answerer::Logging,
            &ApiError::NotFound(PlatformMessage::default()),
        );
        assert_eq!(
            disabled.detail,
            "HTTP 404, logging_disabled: logging is not enabled for this Pull Zone"
        );
        let missing = refused(
            "zone 9",
            Answerer::Main,
            &ApiError::NotFound(PlatformMessage::default()),
        );
        assert_eq!(
            missing.detail,
            "HTTP 404, not found: the account of this key has none by that id"
        );
        let limited = refused(
            "pull zone 7",
            Answerer::Logging,
            &ApiError::RateLimited {
                retry_after: Some(Duration::from_secs(4)),
                message: PlatformMessage::default(),
            },
        );
        assert_eq!(limited.verdict, Verdict::Skip);
        assert!(limited.detail.ends_with("try again in 4 s"), "{}", limited.detail);
        let down = refused("app a", Answerer::Main, &ApiError::Timeout);
        assert_eq!(
            (down.verdict, down.detail.as_str()),
            (Verdict::Fail, "request timed out")
        );
    }

    #[test]
    fn a_clock_apart_from_the_platforms_fails() {
        let now = Utc::now();
        let most = Duration::from_secs(30);
        assert_eq!(
            clock(now, Some(now - chrono::Duration::seconds(5)), most).verdict,
            Verdict::Ok
        );
        let behind = clock(now, Some(now + chrono::Duration::seconds(90)), most);
        assert_eq!(behind.verdict, Verdict::Fail);
        assert!(behind.detail.contains("90 s behind"), "{}", behind.detail);
        assert_eq!(clock(now, None, most).verdict, Verdict::Skip);
    }

    #[test]
    fn the_report_is_a_line_per_check_and_fails_on_any_failure() {
        let checks = [
            check("resolve", Verdict::Ok, "a: an address"),
            check("access key", Verdict::Fail, "refused"),
        ];
        assert_eq!(
            render(&checks),
            "ok    resolve     a: an address\nFAIL  access key  refused\n"
        );
        assert_eq!(exit_code(&checks), 1);
        assert_eq!(exit_code(&checks[..1]), 0);
    }
}
