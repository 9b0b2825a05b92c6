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
use crate::controller::framework::leader::LeaderGate;
use crate::controller::framework::metrics::Metrics;

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
    axum::serve(listener, app)
        .await
        .map_err(|source| RunError::Serve { addr, source })
}

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
}
