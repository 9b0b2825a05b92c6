//! edge-sim's HTTP surface: the router, middleware (journal and faults, AccessKey,
//! media types), response helpers, and one module per API area. Handlers parse and
//! answer; the state they read and change is the [`Sim`] and its world.

pub mod admin;
pub mod logging;
pub mod middleware;
pub mod platform;
pub mod respond;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::document::SimDocument;
use super::emulator::Sim;
use admin::AdminAccess;
use respond::problem;

/// The largest request body of the platform and logging APIs (answered with 413).
pub const MAX_REQUEST_BYTES: usize = 1 << 20;
/// The largest request body of the admin API (bulk seeding of events and logs).
pub const MAX_ADMIN_REQUEST_BYTES: usize = 256 << 20;

/// The whole HTTP surface: platform API, logging API, admin API.
pub fn router(sim: &Arc<Sim>, admin: AdminAccess) -> Router {
    let observed = Router::new()
        .merge(platform::router(sim))
        .merge(logging::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(|request, next| {
            middleware::limit_body(MAX_REQUEST_BYTES, request, next)
        }))
        .layer(axum::middleware::from_fn_with_state(
            sim.clone(),
            middleware::journal_and_faults,
        ));
    Router::new()
        .nest(
            "/_sim",
            admin::router(Arc::new(admin)).layer(DefaultBodyLimit::max(MAX_ADMIN_REQUEST_BYTES)),
        )
        .merge(observed)
        .with_state(sim.clone())
}

async fn not_found(request: Request) -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "Not Found",
        format!("no route for {} {}", request.method(), request.uri().path()),
        None,
    )
}

async fn method_not_allowed(request: Request) -> Response {
    problem(
        StatusCode::METHOD_NOT_ALLOWED,
        "Method Not Allowed",
        format!("{} is not allowed on {}", request.method(), request.uri().path()),
        None,
    )
}

/// A running emulator on a local port; stops when dropped.
#[derive(Debug)]
pub struct RunningSim {
    pub addr: SocketAddr,
    pub sim: Arc<Sim>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl RunningSim {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Serves `sim` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    sim: Arc<Sim>,
    admin: AdminAccess,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(&sim, admin))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Starts an emulator on a free port of 127.0.0.1 (for tests and embedding).
pub async fn spawn(document: SimDocument) -> std::io::Result<RunningSim> {
    spawn_sim(Sim::new(document)).await
}

/// Starts an existing emulator on a free port of 127.0.0.1, its admin API open.
pub async fn spawn_sim(sim: Arc<Sim>) -> std::io::Result<RunningSim> {
    spawn_sim_with(sim, AdminAccess::Open).await
}

/// Starts an existing emulator on a free port of 127.0.0.1.
pub async fn spawn_sim_with(sim: Arc<Sim>, admin: AdminAccess) -> std::io::Result<RunningSim> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = oneshot::channel();
    let served = sim.clone();
    tokio::spawn(async move {
        if let Err(error) = serve(listener, served, admin, async {
            let _ = rx.await;
        })
        .await
        {
            tracing::error!(%error, "edge-sim stopped");
        }
    });
    Ok(RunningSim {
        addr,
        sim,
        shutdown: Some(tx),
    })
}
