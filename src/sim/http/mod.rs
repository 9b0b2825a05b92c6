//! edge-sim's HTTP surface: the router, middleware (journal and faults, AccessKey,
//! media types), query parameters, response helpers, and one module per API area.
//! Handlers parse and answer; the state they read and change is the [`Sim`] and its
//! world.

pub(crate) mod admin;
pub(crate) mod logging;
pub(crate) mod middleware;
pub(crate) mod platform;
pub(crate) mod query;
pub(crate) mod respond;
mod zone_path;

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
pub(crate) const MAX_REQUEST_BYTES: usize = 1 << 20;
/// The largest request body of the admin API (bulk seeding of events and logs).
pub(crate) const MAX_ADMIN_REQUEST_BYTES: usize = 256 << 20;

/// The whole HTTP surface: platform API, logging API, admin API.
pub(crate) fn router(sim: &Arc<Sim>, admin: AdminAccess) -> Router {
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
    /// `http` or `https`.
    pub scheme: &'static str,
    shutdown: Option<oneshot::Sender<()>>,
}

impl RunningSim {
    pub fn base_url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// The certificate chain and key edge-sim serves https with.
#[derive(Clone)]
pub struct ServerTls(Arc<rustls::ServerConfig>);

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTls(<key redacted>)")
    }
}

impl ServerTls {
    /// A server certificate chain (leaf first) and its private key, both PEM.
    pub fn from_pem(chain: &[u8], key: &[u8]) -> Result<Self, String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_slice_iter(chain)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the certificate chain is not PEM: {e}"))?;
        if chain.is_empty() {
            return Err("the certificate file holds no PEM certificate".into());
        }
        let key =
            PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("the key file holds no PEM private key: {e}"))?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| format!("the certificate and key do not make a server identity: {e}"))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self(Arc::new(config)))
    }

    /// [`ServerTls::from_pem`] of two files.
    pub fn from_files(chain: &std::path::Path, key: &std::path::Path) -> Result<Self, String> {
        let read = |path: &std::path::Path| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
        Self::from_pem(&read(chain)?, &read(key)?)
    }
}

/// How long open connections may finish their requests once shutdown starts.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves `sim` on `listener` (https with `tls`) until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    sim: Arc<Sim>,
    admin: AdminAccess,
    tls: Option<ServerTls>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = router(&sim, admin);
    let Some(tls) = tls else {
        return axum::serve(listener, router).with_graceful_shutdown(shutdown).await;
    };
    let handle = axum_server::Handle::new();
    let stopper = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopper.graceful_shutdown(Some(DRAIN));
    });
    let config = axum_server::tls_rustls::RustlsConfig::from_config(tls.0);
    axum_server::tls_rustls::from_tcp_rustls(listener.into_std()?, config)?
        .handle(handle)
        .serve(router.into_make_service())
        .await
}

/// Starts an emulator on a free port of 127.0.0.1 (for tests and embedding).
pub async fn spawn(document: SimDocument) -> std::io::Result<RunningSim> {
    spawn_sim(Sim::new(document)).await
}

/// Starts an existing emulator on a free port of 127.0.0.1, its admin API open.
pub async fn spawn_sim(sim: Arc<Sim>) -> std::io::Result<RunningSim> {
    spawn_sim_with(sim, AdminAccess::Open, None).await
}

/// Starts an existing emulator on a free port of 127.0.0.1, serving https with `tls`.
pub async fn spawn_sim_with(sim: Arc<Sim>, admin: AdminAccess, tls: Option<ServerTls>) -> std::io::Result<RunningSim> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let (tx, rx) = oneshot::channel();
    let served = sim.clone();
    tokio::spawn(async move {
        if let Err(error) = serve(listener, served, admin, tls, async {
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
        scheme,
        shutdown: Some(tx),
    })
}
