//! The signals that ask a process of this crate to stop. As PID 1 of a container a
//! process gets no default action for SIGTERM: it must handle it, or wait for SIGKILL.

/// Resolves on the first SIGTERM or SIGINT.
pub async fn terminate_or_interrupt() {
    use tokio::signal::unix::{SignalKind, signal};
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => tokio::select! {
            _ = terminate.recv() => {}
            () = interrupt => {}
        },
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM; only SIGINT stops this process");
            interrupt.await;
        }
    }
}
