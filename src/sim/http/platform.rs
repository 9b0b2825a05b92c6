//! The main platform API: Shield (event search, access lists, rate limits), Pull Zone
//! certificates and container applications. Every route requires an `AccessKey`.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::middleware;
use axum::response::Response;
use axum::routing::{get, patch, post};

use crate::sim::events::{execute, validate};

use super::middleware::{Caller, RATE_LIMITS_PATH, negotiate, require_access_key, require_json_body};
use super::query::QueryParams;
use super::respond::{bad_request, empty, json, off_the_runtime, parse_json, problem};
use super::zone_path::{ConfigurationPath, Seen, ZoneId, path_id, zone_not_found};
use crate::api::models::pullzone::CompleteCertificateRequest;
use crate::api::models::shield::{
    AccessListAction, AccessListConfiguration, AccessListConfigurationPatch, AccessListConfigurationResponse,
    EventLogsSearchRequest, PageInfo, StatusCodeBody,
};
use crate::api::models::{FieldError, GenericRequestResponse, ValidationErrorBody};
use crate::sim::document::{Resource, ShieldZone};
use crate::sim::emulator::Sim;
use crate::sim::world::{Page, World, WorldError};

pub(crate) const CUSTOM_ENTRY_LIMIT: i64 = 5_000;
pub(crate) const CUSTOM_LIST_LIMIT: i64 = 10;
pub(crate) const DEFAULT_PER_PAGE: i64 = 10;
pub(crate) const MAX_PER_PAGE: i64 = 1_000;

pub(crate) fn router(sim: &Arc<Sim>) -> Router<Arc<Sim>> {
    Router::new()
        .route("/shield/event-logs/{shield_zone_id}/search", post(search_events))
        .route("/shield/shield-zone/{shield_zone_id}/access-lists", get(access_lists))
        .route("/shield/shield-zone/{shield_zone_id}", get(shield_zone))
        .route("/shield/shield-zones", get(shield_zones))
        .route(
            "/shield/shield-zone/get-by-pullzone/{pull_zone_id}",
            get(shield_zone_by_pull_zone),
        )
        .route(
            "/shield/shield-zone/{shield_zone_id}/access-lists/configurations/{id}",
            patch(update_access_list),
        )
        .route(&format!("{RATE_LIMITS_PATH}{{shield_zone_id}}"), get(rate_limits))
        .route("/pullzone/completeExternalHttpCertificate", post(complete_certificate))
        .route("/mc/apps/{app_id}", get(app))
        .layer(middleware::from_fn(require_json_body))
        .layer(middleware::from_fn_with_state(sim.clone(), require_access_key))
        .layer(middleware::from_fn(negotiate))
}

async fn search_events(
    State(sim): State<Arc<Sim>>,
    Extension(caller): Extension<Caller>,
    ZoneId(zone): ZoneId,
    body: Bytes,
) -> Response {
    let request: EventLogsSearchRequest = match parse_json(&body) {
        Ok(request) => request,
        Err(response) => return response,
    };
    let search = match validate(&request, sim.clock.now_ms()) {
        Ok(search) => search,
        Err(error) => return bad_request(error.to_string(), Some(&error.member)),
    };
    let store = {
        let world = sim.world();
        if world.shield_zone(zone).is_none() || !world.sees(&caller.0, &Resource::ShieldZone(zone)) {
            return zone_not_found(zone);
        }
        world.shield_zone_events(zone)
    };
    off_the_runtime(move || json(StatusCode::OK, &execute(&search, &store))).await
}

/// A world error as the platform's answer of a Shield route.
fn shield_error(error: WorldError) -> Response {
    problem(StatusCode::NOT_FOUND, "Not Found", error.to_string(), None)
}

async fn access_lists(State(sim): State<Arc<Sim>>, Seen(ZoneId(zone)): Seen<ZoneId>) -> Response {
    let lists = match sim.world().access_lists(zone) {
        Ok(lists) => lists,
        Err(error) => return shield_error(error),
    };
    let body = serde_json::json!({
        "managedLists": lists.managed,
        "customListCount": lists.custom.len(),
        "customLists": lists.custom,
        "customEntryCount": lists.custom_entry_count,
        "customEntryLimit": CUSTOM_ENTRY_LIMIT,
        "customListLimit": CUSTOM_LIST_LIMIT,
        "error": GenericRequestResponse::ok(),
    });
    json(StatusCode::OK, &body)
}

/// `{data: null, error}`: the published answer of a refused configuration PATCH.
fn patch_refused(message: String, error_key: &str) -> Response {
    json(
        StatusCode::BAD_REQUEST,
        &AccessListConfigurationResponse {
            data: None,
            error: Some(GenericRequestResponse {
                status_code: 400,
                success: false,
                message: Some(message),
                error_key: Some(error_key.to_string()),
            }),
        },
    )
}

async fn update_access_list(
    State(sim): State<Arc<Sim>>,
    Seen(ConfigurationPath { zone, configuration }): Seen<ConfigurationPath>,
    body: Bytes,
) -> Response {
    let patch: AccessListConfigurationPatch = match serde_json::from_slice(&body) {
        Ok(patch) => patch,
        Err(error) => return patch_refused(format!("invalid body: {error}"), "validation_error"),
    };
    if let Some(action) = patch.action.filter(|a| AccessListAction::from_code(*a).is_none()) {
        return patch_refused(
            format!("action: {action} is not one of 0 (None) to 5 (Bypass)"),
            "validation_error",
        );
    }
    let updated =
        sim.world_mut()
            .update_access_list(zone, configuration, patch.is_enabled, patch.action.map(i64::from));
    let (is_enabled, action) = match updated {
        Ok(now) => now,
        Err(error) => return shield_error(error),
    };
    let body = AccessListConfigurationResponse {
        data: Some(AccessListConfiguration {
            is_enabled: Some(is_enabled),
            action: i32::try_from(action).ok(),
        }),
        error: Some(GenericRequestResponse::ok()),
    };
    json(StatusCode::OK, &body)
}

fn status_body(status: StatusCode) -> Response {
    json(
        status,
        &StatusCodeBody {
            status_code: i32::from(status.as_u16()),
        },
    )
}

/// The `page` and `perPage` of a listing (defaults 1 and 10); the member in error.
fn paging(params: &[(String, String)]) -> Result<(i64, i64), &'static str> {
    let mut page = 1;
    let mut per_page = DEFAULT_PER_PAGE;
    for (name, value) in params {
        let parsed = value.parse::<i64>().ok();
        match (name.as_str(), parsed) {
            ("page", Some(n)) if n >= 1 => page = n,
            ("perPage", Some(n)) if (1..=MAX_PER_PAGE).contains(&n) => per_page = n,
            ("page", _) => return Err("page"),
            ("perPage", _) => return Err("perPage"),
            _ => {}
        }
    }
    Ok((page, per_page))
}

fn page_info<T>(page: &Page<T>, current_page: i64, page_size: i64) -> PageInfo {
    PageInfo {
        total_count: page.total,
        total_pages: page.total_pages,
        current_page,
        next_page: (current_page < page.total_pages).then(|| current_page + 1),
        page_size,
    }
}

async fn rate_limits(
    State(sim): State<Arc<Sim>>,
    Extension(caller): Extension<Caller>,
    Path(zone): Path<String>,
    QueryParams(params): QueryParams,
) -> Response {
    let Ok(zone) = zone.parse::<i64>() else {
        return status_body(StatusCode::BAD_REQUEST);
    };
    if !sim.world().sees(&caller.0, &Resource::ShieldZone(zone)) {
        return status_body(StatusCode::NOT_FOUND);
    }
    let Ok((page, per_page)) = paging(&params) else {
        return status_body(StatusCode::BAD_REQUEST);
    };
    let page_of = match sim.world().rate_limit_page(zone, page, per_page) {
        Ok(rules) => rules,
        Err(_) => return status_body(StatusCode::NOT_FOUND),
    };
    let body = serde_json::json!({
        "data": page_of.items,
        "page": page_info(&page_of, page, per_page),
        "error": GenericRequestResponse::ok(),
    });
    json(StatusCode::OK, &body)
}

/// The Shield Zone that protects a Pull Zone (each fixture zone names its Pull Zone).
async fn shield_zone_by_pull_zone(
    State(sim): State<Arc<Sim>>,
    Extension(caller): Extension<Caller>,
    Path(pull_zone): Path<String>,
) -> Response {
    let pull_zone = match path_id(&pull_zone, "pullZoneId") {
        Ok(id) => id,
        Err(response) => return response,
    };
    configuration_of(
        &sim,
        &caller,
        |world| {
            world
                .shield_zone_of_pull_zone(pull_zone)
                .filter(|_| world.sees(&caller.0, &Resource::PullZone(pull_zone)))
        },
        || {
            problem(
                StatusCode::NOT_FOUND,
                "Not Found",
                format!("no Shield Zone protects Pull Zone {pull_zone}"),
                None,
            )
        },
    )
}

/// `{data: ShieldZoneResponse}` of the zone `find` names where `caller` sees it, else
/// `missing`.
fn configuration_of(
    sim: &Sim,
    caller: &Caller,
    find: impl FnOnce(&World) -> Option<i64>,
    missing: impl FnOnce() -> Response,
) -> Response {
    let configuration = {
        let world = sim.world();
        find(&world)
            .filter(|zone| world.sees(&caller.0, &Resource::ShieldZone(*zone)))
            .and_then(|zone| world.shield_zone(zone))
            .map(ShieldZone::configuration)
    };
    match configuration {
        Some(configuration) => json(StatusCode::OK, &serde_json::json!({"data": configuration})),
        None => missing(),
    }
}

/// `GET /shield/shield-zone/{id}`: the zone's configuration (`GetShieldZoneResponse`).
async fn shield_zone(
    State(sim): State<Arc<Sim>>,
    Extension(caller): Extension<Caller>,
    ZoneId(zone): ZoneId,
) -> Response {
    configuration_of(&sim, &caller, |_| Some(zone), || zone_not_found(zone))
}

/// `GET /shield/shield-zones?page&perPage`: the zones the key sees, by id, a page of
/// them (`GetShieldZonesResponse`).
async fn shield_zones(
    State(sim): State<Arc<Sim>>,
    Extension(caller): Extension<Caller>,
    QueryParams(params): QueryParams,
) -> Response {
    let (page, per_page) = match paging(&params) {
        Ok(paging) => paging,
        Err(member) => {
            return bad_request(
                format!("{member} must be an integer from 1 (perPage: to {MAX_PER_PAGE})"),
                Some(member),
            );
        }
    };
    let zones = sim.world().shield_zone_page(&caller.0, page, per_page);
    let body = serde_json::json!({
        "data": zones.items,
        "page": page_info(&zones, page, per_page),
    });
    json(StatusCode::OK, &body)
}

fn field_error(status: StatusCode, key: &str, message: String) -> Response {
    json(
        status,
        &FieldError {
            error_key: Some(key.to_string()),
            field: Some("Hostname".to_string()),
            message: Some(message),
        },
    )
}

async fn complete_certificate(
    State(sim): State<Arc<Sim>>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Response {
    let request: CompleteCertificateRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => {
            return field_error(
                StatusCode::BAD_REQUEST,
                "validation_error",
                format!("invalid body: {error}"),
            );
        }
    };
    let hostname = request.hostname.trim();
    if hostname.is_empty() {
        return field_error(
            StatusCode::BAD_REQUEST,
            "validation_error",
            "Hostname is required".into(),
        );
    }
    let completed = {
        let mut world = sim.world_mut();
        if world.sees_hostname(&caller.0, hostname) {
            world.complete_certificate(hostname)
        } else {
            Err(WorldError::HostnameNotFound(hostname.to_string()))
        }
    };
    match completed {
        Ok(()) => empty(StatusCode::OK),
        Err(error @ WorldError::ChallengePending(_)) => field_error(
            StatusCode::BAD_REQUEST,
            "pullzone.domain_verification_failed",
            error.to_string(),
        ),
        Err(error) => field_error(StatusCode::NOT_FOUND, "pullzone.hostname_not_found", error.to_string()),
    }
}

async fn app(
    State(sim): State<Arc<Sim>>,
    Extension(caller): Extension<Caller>,
    Path(app_id): Path<String>,
) -> Response {
    let world = sim.world();
    let visible = world.sees(&caller.0, &Resource::App(app_id.clone()));
    match world.app(&app_id).filter(|_| visible) {
        Some(app) => json(StatusCode::OK, app),
        None => json(
            StatusCode::NOT_FOUND,
            &ValidationErrorBody {
                title: Some("Not Found".into()),
                status: Some(404),
                detail: Some(format!("application {app_id} was not found")),
                instance: Some(format!("/mc/apps/{app_id}")),
                errors: Vec::new(),
                id: Some(app_id),
            },
        ),
    }
}
