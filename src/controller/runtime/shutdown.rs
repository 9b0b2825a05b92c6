//! Stopping on SIGTERM or SIGINT within a bounded time, whatever still answers: the
//! first signal stops new reconciles, in-flight ones get [`GRACE`] to finish, the leader
//! Lease is released if the apiserver answers within [`LEASE_RELEASE_GRACE`], and the
//! process exits. Kubernetes gives a Pod 30 s by default; this takes at most 7 s.

use std::time::Duration;

use tokio::sync::watch;

/// How long in-flight reconciles may run once a stop is requested.
pub const GRACE: Duration = Duration::from_secs(5);
/// How long releasing the leader Lease may take on the way out.
pub const LEASE_RELEASE_GRACE: Duration = Duration::from_secs(2);

/// A stop request, shared by every part of the process that must wind down.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// Requested on the first SIGTERM or SIGINT.
    pub fn on_signals() -> Self {
        let (request, requested) = watch::channel(false);
        tokio::spawn(async move {
            crate::signal::terminate_or_interrupt().await;
            tracing::info!("stop requested; finishing in-flight work");
            let _ = request.send(true);
            // Keeps the sender, so the request stays visible to late subscribers.
            request.closed().await;
        });
        Self(requested)
    }

    /// A request that a test triggers itself.
    #[cfg(test)]
    pub fn manual() -> (watch::Sender<bool>, Self) {
        let (request, requested) = watch::channel(false);
        (request, Self(requested))
    }

    /// Resolves once a stop has been requested.
    pub async fn requested(mut self) {
        if self.0.wait_for(|stop| *stop).await.is_err() {
            // The requester is gone without asking: never resolves.
            std::future::pending::<()>().await;
        }
    }
}

/// Runs `work` until it ends, or until a stop is requested and then at most `grace`
/// longer. Returns whether the work ended by itself or within the grace.
pub async fn bounded<F: Future<Output = ()>>(work: F, shutdown: Shutdown, grace: Duration) -> bool {
    tokio::pin!(work);
    tokio::select! {
        () = &mut work => true,
        () = shutdown.requested() => tokio::time::timeout(grace, work).await.is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn work_that_ignores_the_request_is_abandoned_after_the_grace() {
        let (request, shutdown) = Shutdown::manual();
        let started = tokio::time::Instant::now();
        let stuck = std::future::pending::<()>();
        let stopper = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = request.send(true);
        };
        let (finished, ()) = tokio::join!(bounded(stuck, shutdown, GRACE), stopper);
        assert!(!finished);
        assert_eq!(started.elapsed(), Duration::from_secs(1) + GRACE);
    }

    #[tokio::test(start_paused = true)]
    async fn work_that_ends_within_the_grace_counts_as_finished() {
        let (request, shutdown) = Shutdown::manual();
        let _ = request.send(true);
        let draining = tokio::time::sleep(Duration::from_secs(2));
        assert!(bounded(draining, shutdown, GRACE).await);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_request_the_work_runs_to_its_end() {
        let (_request, shutdown) = Shutdown::manual();
        let started = tokio::time::Instant::now();
        assert!(bounded(tokio::time::sleep(Duration::from_secs(3600)), shutdown, GRACE).await);
        assert_eq!(started.elapsed(), Duration::from_secs(3600));
    }
}
