//! A platform that cannot be trusted, served on 127.0.0.1: redirects, endless and
//! dripping bodies, HTML with 200; and a process's peak memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

/// A server on 127.0.0.1 that stops with the test.
pub(crate) async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

/// Another host: counts the requests that reach it and those that carry a key.
#[derive(Default)]
pub(crate) struct Elsewhere {
    pub requests: AtomicUsize,
    pub with_key: AtomicUsize,
}

pub(crate) async fn elsewhere(State(seen): State<Arc<Elsewhere>>, headers: HeaderMap) -> StatusCode {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    if headers.contains_key("accesskey") {
        seen.with_key.fetch_add(1, Ordering::SeqCst);
    }
    StatusCode::OK
}

fn endless() -> Body {
    let chunk = Bytes::from(vec![b'x'; 64 << 10]);
    Body::from_stream(futures::stream::repeat_with(move || {
        Ok::<_, std::io::Error>(chunk.clone())
    }))
}

/// An endless body whose `Content-Length` says `length`.
async fn endless_claiming(length: &'static str) -> Response {
    let mut response = Response::new(endless());
    response
        .headers_mut()
        .insert(header::CONTENT_LENGTH, header::HeaderValue::from_static(length));
    response
}

/// The hostile platform: `/<behaviour>/mc/apps/<id>`.
pub(crate) fn hostile(other_host: String) -> Router {
    let redirect = |status: StatusCode, to: String| {
        move || {
            let to = to.clone();
            async move { (status, [(header::LOCATION, to)]).into_response() }
        }
    };
    Router::new()
        .route(
            "/redirect-302-other/{*rest}",
            any(redirect(StatusCode::FOUND, format!("{other_host}/mc/apps/x"))),
        )
        .route(
            "/redirect-307-other/{*rest}",
            any(redirect(
                StatusCode::TEMPORARY_REDIRECT,
                format!("{other_host}/mc/apps/x"),
            )),
        )
        .route(
            "/redirect-302-same/{*rest}",
            any(redirect(StatusCode::FOUND, "/html/mc/apps/x".into())),
        )
        .route(
            "/redirect-307-same/{*rest}",
            any(redirect(StatusCode::TEMPORARY_REDIRECT, "/html/mc/apps/x".into())),
        )
        .route("/endless/{*rest}", any(|| async { Response::new(endless()) }))
        .route("/endless-with-length/{*rest}", any(|| endless_claiming("10737418240")))
        // Claims one KiB, then sends on and on.
        .route("/endless-small-length/{*rest}", any(|| endless_claiming("1024")))
        .route(
            "/drip/{*rest}",
            any(|| async {
                let drip = futures::stream::unfold((), |()| async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Some((Ok::<_, std::io::Error>(Bytes::from_static(b"{")), ()))
                });
                Response::new(Body::from_stream(drip))
            }),
        )
        .route(
            "/html/{*rest}",
            any(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html")],
                    "<html><body><h1>Welcome to our proxy</h1></body></html>",
                )
            }),
        )
}

/// The member `name` (`VmHWM`, `VmRSS`: KiB) of process `pid`'s `/proc` status, while
/// it runs.
pub(crate) fn memory_kib(pid: u32, name: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The peak memory (`VmHWM`, KiB) of process `pid`, read every 5 ms until `done`
/// says it has exited; the last value read before.
pub(crate) async fn peak_kib_until(pid: u32, mut done: impl FnMut() -> bool) -> u64 {
    let mut peak = 0;
    loop {
        if let Some(kib) = memory_kib(pid, "VmHWM") {
            peak = peak.max(kib);
        }
        if done() {
            return peak;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
