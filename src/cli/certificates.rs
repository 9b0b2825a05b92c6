//! `edgectl cert complete`: one call, and an outcome per class of answer.

use serde::Serialize;

use crate::api::ApiError;

/// The outcome of a certificate completion, as `edgectl` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CompletionOutcome {
    pub hostname: String,
    /// `Issued`, `VerificationFailed`, `HostnameNotFound`, or the error's reason
    /// (`Unauthorized`, `RateLimited`, `ServerError`...).
    pub outcome: String,
    pub issued: bool,
    /// Whether running the same command later may succeed.
    pub retryable: bool,
    /// What happened and what to do, in one sentence.
    pub message: String,
}

/// Classifies the answer of `POST /pullzone/completeExternalHttpCertificate`.
pub(crate) fn outcome(hostname: &str, result: &Result<(), ApiError>) -> CompletionOutcome {
    let platform = |e: &ApiError| {
        e.platform_message()
            .map(|m| m.message.clone())
            .filter(|m| !m.is_empty())
            .map_or_else(String::new, |m| format!(" (the platform says: {m})"))
    };
    let (outcome, retryable, message) = match result {
        Ok(()) => (
            "Issued".to_string(),
            false,
            format!("certificate issued and loaded for {hostname}"),
        ),
        Err(e @ ApiError::Validation { status: 400, .. }) => (
            "VerificationFailed".to_string(),
            true,
            format!(
                "domain verification of {hostname} failed{}; make sure the hostname points at the Pull Zone and retry later",
                platform(e)
            ),
        ),
        Err(e @ ApiError::NotFound(_)) => (
            "HostnameNotFound".to_string(),
            false,
            format!(
                "{hostname} is not registered on any Pull Zone of this account{}; add it first",
                platform(e)
            ),
        ),
        Err(ApiError::Unauthorized(_)) => (
            "Unauthorized".to_string(),
            false,
            "the access key was refused; check --access-key or EDGE_ACCESS_KEY".to_string(),
        ),
        Err(ApiError::Forbidden(_)) => (
            "Forbidden".to_string(),
            false,
            "the access key may not touch this hostname's Pull Zone; use a key of the account that owns it".to_string(),
        ),
        Err(e @ ApiError::RateLimited { retry_after, .. }) => (
            e.reason().to_string(),
            true,
            match retry_after {
                Some(after) => format!("rate limited; retry after {} s", after.as_secs()),
                None => "rate limited; retry later".to_string(),
            },
        ),
        Err(e) => (e.reason().to_string(), e.is_retryable(), e.to_string()),
    };
    CompletionOutcome {
        hostname: hostname.to_string(),
        issued: result.is_ok(),
        outcome,
        retryable,
        message,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn each_error_class_has_its_outcome() {
        let body = br#"{"ErrorKey":"pullzone.domain_verification_failed","Field":"Hostname","Message":"not yet"}"#;
        let cases = [
            (Ok(()), "Issued", false),
            (
                Err(ApiError::from_response(400, None, body)),
                "VerificationFailed",
                true,
            ),
            (Err(ApiError::from_response(404, None, body)), "HostnameNotFound", false),
            (Err(ApiError::from_response(401, None, b"")), "Unauthorized", false),
            (
                Err(ApiError::from_response(429, Some(Duration::from_secs(7)), b"")),
                "RateLimited",
                true,
            ),
            (Err(ApiError::from_response(503, None, b"")), "ServerError", true),
        ];
        for (result, expected, retryable) in cases {
            let outcome = outcome("shop.example.com", &result);
            assert_eq!(
                (outcome.outcome.as_str(), outcome.retryable),
                (expected, retryable),
                "{outcome:?}"
            );
        }
        let verification = outcome("a.example", &Err(ApiError::from_response(400, None, body)));
        assert!(verification.message.contains("not yet"), "{}", verification.message);
        let limited = outcome(
            "a.example",
            &Err(ApiError::from_response(429, Some(Duration::from_secs(7)), b"")),
        );
        assert!(limited.message.contains("7 s"));
    }
}
