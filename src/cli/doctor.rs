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
    let reached = first.is_ok();
    checks.extend(first_contact(&config.base_url, &first));
    if let Ok(probe) = &first {
        checks.push(clock(Utc::now(), probe.server_time, args.max_clock_skew.into()));
    }
    if !reached {
        checks.push(check("platform", Verdict::Skip, "not tried: the API is not usable"));
        return checks;
    }
    checks.push(match logging.probe(true).await {
        Ok(probe) => check(
            "logging API",
            Verdict::Ok,
            format!(
                "{} answers (HTTP {})",
                without_userinfo(&logging.config().logging_url),
                probe.status
            ),
        ),
        Err(error) => check("logging API", Verdict::Fail, error.to_string()),
    });
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
            Err(error) => check(&format!("zone {zone}"), Verdict::Fail, error.to_string()),
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
            Err(error) => check(&format!("pull zone {pull_zone}"), Verdict::Fail, error.to_string()),
        });
    }
    for app in &args.apps {
        checks.push(match platform.get_app(app).await {
            Ok(found) => check(
                &format!("app {app}"),
                Verdict::Ok,
                format!("visible: {}, status {}", found.name, found.status.as_str()),
            ),
            Err(error) => check(&format!("app {app}"), Verdict::Fail, error.to_string()),
        });
    }
    checks
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
        Ok(probe) => vec![
            connected,
            tls_ok(),
            check(
                "access key",
                Verdict::Ok,
                format!("accepted (an unknown application answered HTTP {})", probe.status),
            ),
        ],
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
