//! The ids of a platform route's path, read as the platform reads them, and the Shield
//! Zone they name as the caller may see it: extractors that open the Shield handlers.

use std::sync::Arc;

use axum::extract::{Extension, FromRequestParts, Path};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use super::middleware::Caller;
use super::respond::{bad_request, problem};
use crate::sim::document::Resource;
use crate::sim::emulator::Sim;

/// An id of the path: an int32, else 400 naming `member`.
pub(super) fn path_id(raw: &str, member: &str) -> Result<i64, Response> {
    raw.parse::<i32>()
        .map(i64::from)
        .map_err(|_| bad_request(format!("{member}: `{raw}` is not a valid int32"), Some(member)))
}

/// 404 for a Shield Zone that does not exist or that the caller does not see.
pub(super) fn zone_not_found(id: i64) -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "Not Found",
        format!("Shield Zone {id} was not found"),
        None,
    )
}

/// The ids of a path that name a Shield Zone.
pub(super) trait ZonePath {
    fn zone(&self) -> i64;
}

/// The Shield Zone of the path, `{shield_zone_id}`.
pub(super) struct ZoneId(pub i64);

impl ZonePath for ZoneId {
    fn zone(&self) -> i64 {
        self.0
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ZoneId {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Path(zone) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        path_id(&zone, "shieldZoneId").map(Self)
    }
}

/// A Shield Zone and one of its access list configurations, `{shield_zone_id}` and
/// `{id}`, read in that order.
pub(super) struct ConfigurationPath {
    pub zone: i64,
    pub configuration: i64,
}

impl ZonePath for ConfigurationPath {
    fn zone(&self) -> i64 {
        self.zone
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ConfigurationPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Path((zone, configuration)) = Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self {
            zone: path_id(&zone, "shieldZoneId")?,
            configuration: path_id(&configuration, "id")?,
        })
    }
}

/// The path's ids `P`, whose Shield Zone the caller sees: a zone another account owns
/// is answered as one that does not exist.
pub(super) struct Seen<P>(pub P);

impl<P> FromRequestParts<Arc<Sim>> for Seen<P>
where
    P: FromRequestParts<Arc<Sim>, Rejection = Response> + ZonePath + Send,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, sim: &Arc<Sim>) -> Result<Self, Response> {
        let Extension(caller) = Extension::<Caller>::from_request_parts(parts, sim)
            .await
            .map_err(IntoResponse::into_response)?;
        let ids = P::from_request_parts(parts, sim).await?;
        if !sim.world().sees(&caller.0, &Resource::ShieldZone(ids.zone())) {
            return Err(zone_not_found(ids.zone()));
        }
        Ok(Self(ids))
    }
}
