//! The CDN logging API: `GET /v2/pullzones/{id}/logs` and the legacy
//! `GET /{MM-dd-yy}/{id}.log`, with their own auth, errors and rate limit.
//!
//! Checks run in this order: credentials (401 none, 403 invalid), path (400), Pull
//! Zone unknown or suspended (403), logging disabled (404), rate limit (429),
//! query parameters (400).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use super::query::QueryParams;
use super::respond::{header_str, json, off_the_runtime};
use crate::api::models::{LoggingError, LoggingErrorBody};
use crate::sim::document::Resource;
use crate::sim::emulator::Sim;
use crate::sim::logs::{DayFileQuery, LogQuery, v1_day};

pub(crate) fn router() -> Router<Arc<Sim>> {
    Router::new()
        .route("/v2/pullzones/{pull_zone_id}/logs", get(query_v2))
        .route("/{day}/{file}", get(day_file_v1))
}

fn logging_error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    json(
        status,
        &LoggingErrorBody {
            error: LoggingError {
                code: code.to_string(),
                message: message.into(),
            },
        },
    )
}

fn invalid_request(message: impl Into<String>) -> Response {
    logging_error(StatusCode::BAD_REQUEST, "invalid_request", message)
}

/// The account of an `AccessKey`; `None` for a bearer token, which the platform mints
/// for the Pull Zones its holder may read.
fn authenticate(sim: &Sim, headers: &HeaderMap) -> Result<Option<Arc<str>>, Response> {
    let forbidden = || logging_error(StatusCode::FORBIDDEN, "forbidden", "the credentials are not valid");
    if let Some(key) = header_str(headers, "AccessKey") {
        return sim.account_of(key).map(Some).ok_or_else(forbidden);
    }
    let Some(authorization) = header_str(headers, header::AUTHORIZATION.as_str()) else {
        return Err(logging_error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send an AccessKey header or an Authorization: Bearer token",
        ));
    };
    let token = authorization
        .strip_prefix("Bearer ")
        .or_else(|| authorization.strip_prefix("bearer "))
        .ok_or_else(forbidden)?;
    let secret = sim.world().document.jwt_secret.clone().ok_or_else(forbidden)?;
    let mut validation = Validation::new(Algorithm::HS256);
    validation.validate_aud = false;
    validation.set_required_spec_claims(&["exp"]);
    validation.leeway = 0;
    // The emulator clock may be fixed: check `exp` against it, not the system clock.
    validation.validate_exp = false;
    let data =
        jsonwebtoken::decode::<serde_json::Value>(token, &DecodingKey::from_secret(secret.as_bytes()), &validation)
            .map_err(|_| forbidden())?;
    let expires = data
        .claims
        .get("exp")
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(forbidden)?;
    if expires * 1000 <= sim.clock.now_ms() {
        return Err(forbidden());
    }
    Ok(None)
}

/// Pull Zone state and the rate limit, shared by both versions.
fn admit(sim: &Sim, account: Option<&str>, pull_zone_id: i64) -> Result<(), Response> {
    {
        let world = sim.world();
        let visible = account.is_none_or(|account| world.sees(account, &Resource::PullZone(pull_zone_id)));
        match world.pull_zone(pull_zone_id).filter(|_| visible) {
            None => {
                return Err(logging_error(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    format!("no access to Pull Zone {pull_zone_id}"),
                ));
            }
            Some(zone) if zone.suspended => {
                return Err(logging_error(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    format!("Pull Zone {pull_zone_id} is suspended"),
                ));
            }
            Some(zone) if !zone.logging_enabled => {
                return Err(logging_error(
                    StatusCode::NOT_FOUND,
                    "logging_disabled",
                    format!("logging is not enabled for Pull Zone {pull_zone_id}"),
                ));
            }
            Some(_) => {}
        }
    }
    sim.limiter
        .admit(pull_zone_id, sim.clock.now_ms())
        .map_err(|retry_after| {
            let mut response = logging_error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "more than 30 requests in 10 seconds for this Pull Zone",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            response
        })
}

fn parse_pull_zone(raw: &str) -> Result<i64, Response> {
    raw.parse::<i64>()
        .map_err(|_| invalid_request(format!("pull zone id `{raw}` is not an integer")))
}

async fn query_v2(
    State(sim): State<Arc<Sim>>,
    Path(pull_zone): Path<String>,
    QueryParams(params): QueryParams,
    headers: HeaderMap,
) -> Response {
    let result = (|| {
        let account = authenticate(&sim, &headers)?;
        let pull_zone_id = parse_pull_zone(&pull_zone)?;
        admit(&sim, account.as_deref(), pull_zone_id)?;
        let query = LogQuery::parse(&params, sim.clock.now()).map_err(invalid_request)?;
        Ok((query, pull_zone_id, sim.world().pull_zone_logs(pull_zone_id)))
    })();
    match result {
        Ok((query, pull_zone_id, logs)) => {
            off_the_runtime(move || json(StatusCode::OK, &query.execute(pull_zone_id, &logs))).await
        }
        Err(response) => response,
    }
}

async fn day_file_v1(
    State(sim): State<Arc<Sim>>,
    Path((day, file)): Path<(String, String)>,
    QueryParams(params): QueryParams,
    headers: HeaderMap,
) -> Response {
    let Some(pull_zone) = file.strip_suffix(".log") else {
        return super::respond::problem(
            StatusCode::NOT_FOUND,
            "Not Found",
            format!("no route for /{day}/{file}"),
            None,
        );
    };
    let result = (|| {
        let account = authenticate(&sim, &headers)?;
        let pull_zone_id = parse_pull_zone(pull_zone)?;
        let now = sim.clock.now();
        let day = v1_day(&day, now).map_err(invalid_request)?;
        admit(&sim, account.as_deref(), pull_zone_id)?;
        let query = DayFileQuery::parse(&params).map_err(invalid_request)?;
        Ok((query, day, now, sim.world().pull_zone_logs(pull_zone_id)))
    })();
    match result {
        Ok((query, day, now, logs)) => {
            off_the_runtime(move || {
                (
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    query.day_file(&logs, day, now),
                )
                    .into_response()
            })
            .await
        }
        Err(response) => response,
    }
}
