//! The metrics and health server: /metrics, /healthz (liveness: no watch failing for
//! five minutes) and /readyz (ready: started, and every watch answering).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use super::RunError;
use crate::controller::framework::services::leader::LeaderGate;
use crate::controller::framework::services::metrics::Metrics;

pub(super) struct Health {
    pub(super) metrics: Arc<Metrics>,
    pub(super) leader: Arc<LeaderGate>,
    pub(super) ready: AtomicBool,
    /// Controllers whose watch is failing now (RBAC forbidden, CRD missing...).
    pub(super) failing_watches: std::sync::atomic::AtomicUsize,
    /// Since when some watch has been failing without a pause.
    pub(super) failing_since: std::sync::Mutex<Option<tokio::time::Instant>>,
}

/// The media type of the metrics exposition.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A watch failing this long makes /healthz fail, so the kubelet restarts the Pod.
const UNHEALTHY_AFTER: Duration = Duration::from_secs(300);

impl Health {
    /// Not ready yet, no watch failing.
    pub(super) fn new(metrics: Arc<Metrics>, leader: Arc<LeaderGate>) -> Self {
        Self {
            metrics,
            leader,
            ready: AtomicBool::new(false),
            failing_watches: Default::default(),
            failing_since: Default::default(),
        }
    }

    pub(super) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed) && self.failing_watches.load(Ordering::Relaxed) == 0
    }

    pub(super) fn is_live(&self) -> bool {
        let since = *self.failing_since.lock().unwrap_or_else(|e| e.into_inner());
        since.is_none_or(|since| since.elapsed() < UNHEALTHY_AFTER)
    }

    pub(super) fn watch_failed(&self, failing: &AtomicBool) {
        if !failing.swap(true, Ordering::Relaxed) {
            self.failing_watches.fetch_add(1, Ordering::Relaxed);
        }
        self.failing_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(tokio::time::Instant::now);
    }

    pub(super) fn watch_recovered(&self, failing: &AtomicBool) {
        if failing.swap(false, Ordering::Relaxed) && self.failing_watches.fetch_sub(1, Ordering::Relaxed) == 1 {
            *self.failing_since.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

pub(super) async fn serve_health(addr: SocketAddr, health: Arc<Health>) -> Result<(), RunError> {
    let app = Router::new()
        .route(
            "/metrics",
            get(|State(h): State<Arc<Health>>| async move {
                h.metrics.set_leader(h.leader.may_act());
                ([(http::header::CONTENT_TYPE, OPENMETRICS)], h.metrics.encode())
            }),
        )
        .route(
            "/healthz",
            get(|State(h): State<Arc<Health>>| async move {
                if h.is_live() {
                    (StatusCode::OK, "ok")
                } else {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "a watch has been failing for 5 minutes",
                    )
                }
            }),
        )
        .route(
            "/readyz",
            get(|State(h): State<Arc<Health>>| async move {
                match (h.ready.load(Ordering::Relaxed), h.is_ready()) {
                    (_, true) => (StatusCode::OK, "ok"),
                    (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "starting"),
                    (true, false) => (StatusCode::SERVICE_UNAVAILABLE, "a watch is failing; see the log"),
                }
            }),
        )
        .with_state(health);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| RunError::Serve { addr, source })?;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of file descriptors, or a connection reset before it was taken: the
            // next one may do.
            Err(error) => {
                tracing::warn!(%error, "metrics server: a connection was not accepted");
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let mut connection = hyper::server::conn::http1::Builder::new();
            connection
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .max_buf_size(CONNECTION_BUFFER_BYTES);
            // A client that stops half-way, or sends too much, just loses its connection.
            let _ = connection
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

/// How long a client of /metrics, /healthz or /readyz may take to send a request's
/// headers; a slower one loses its connection.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What a connection may buffer of a request (its headers): what any number of idle or
/// slow connections hold is this much each, not hyper's default of ~400 KiB.
const CONNECTION_BUFFER_BYTES: usize = 16 << 10;

/// The pause after a failed accept.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_failing_watch_fails_readiness_at_once_and_liveness_after_five_minutes() {
        let health = Health {
            metrics: Arc::new(Metrics::default()),
            leader: Arc::new(LeaderGate::sole()),
            ready: AtomicBool::new(true),
            failing_watches: Default::default(),
            failing_since: Default::default(),
        };
        let (first, second) = (AtomicBool::new(false), AtomicBool::new(false));
        health.watch_failed(&first);
        health.watch_failed(&first);
        health.watch_failed(&second);
        assert!(!health.is_ready() && health.is_live());
        tokio::time::sleep(UNHEALTHY_AFTER).await;
        assert!(!health.is_live());
        health.watch_recovered(&first);
        assert!(!health.is_ready() && !health.is_live(), "the other watch still fails");
        health.watch_recovered(&second);
        assert!(health.is_ready() && health.is_live());
    }

    fn healthy() -> Arc<Health> {
        Arc::new(Health {
            metrics: Arc::new(Metrics::default()),
            leader: Arc::new(LeaderGate::sole()),
            ready: AtomicBool::new(true),
            failing_watches: Default::default(),
            failing_since: Default::default(),
        })
    }

    /// A server on a free loopback port, and a connection to it.
    async fn connected() -> tokio::net::TcpStream {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port");
        tokio::spawn(serve_health(addr, healthy()));
        for _ in 0..100 {
            if let Ok(stream) = tokio::net::TcpStream::connect(addr).await {
                return stream;
            }
            tokio::task::yield_now().await;
        }
        panic!("the server did not listen on {addr}");
    }

    /// Reads until the server closes the connection, within `within`.
    async fn closed_within(stream: &mut tokio::net::TcpStream, within: Duration) -> String {
        use tokio::io::AsyncReadExt;
        let mut answer = Vec::new();
        tokio::time::timeout(within, stream.read_to_end(&mut answer))
            .await
            .expect("the server closed the connection in time")
            .ok();
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn a_client_that_never_finishes_its_headers_loses_its_connection() {
        use tokio::io::AsyncWriteExt;
        let mut stream = connected().await;
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: operator\r\nX-Slow: ")
            .await
            .expect("written");
        closed_within(&mut stream, HEADER_READ_TIMEOUT + Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn headers_larger_than_a_connection_buffers_are_refused() {
        use tokio::io::AsyncWriteExt;
        let mut stream = connected().await;
        let padding = "x".repeat(CONNECTION_BUFFER_BYTES * 2);
        let request = format!("GET /healthz HTTP/1.1\r\nHost: operator\r\nX-Pad: {padding}\r\n\r\n");
        // The server may close before it read everything.
        let _ = stream.write_all(request.as_bytes()).await;
        let answer = closed_within(&mut stream, Duration::from_secs(5)).await;
        assert!(!answer.contains("200 OK"), "{answer}");

        let mut stream = connected().await;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: operator\r\nConnection: close\r\n\r\n")
            .await
            .expect("written");
        let answer = closed_within(&mut stream, Duration::from_secs(5)).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    }
}
