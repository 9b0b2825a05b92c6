//! The operator's Kubernetes client: at most a set number of requests at once, watches
//! aside, their seats handed to namespaces in turn ([`FairQueue`]). A seat is held
//! until the answer's body is read or dropped, so what the client holds (connections,
//! their buffers, answers being read) is bounded by the seats, not by how many objects
//! fall due at once: a start on thousands of paused objects writes their statuses a
//! few at a time, and one namespace's writes delay another's by at most one request
//! per seat.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Request, Response};
use kube::client::{Body, ClientBuilder, DynBody};
use tower::buffer::Buffer;
use tower::{BoxError, Layer, Service, ServiceExt};

use crate::fairness::{FairQueue, Seat};

/// Requests queued for the client's connection pool beyond those seated: none wait
/// there long, since only seated requests (and watches) reach it.
const DISPATCH_QUEUE: usize = 64;

/// A client for `config` that runs at most `seats` requests at once, watches aside.
pub(super) fn seated_client(config: kube::Config, seats: usize) -> Result<kube::Client, kube::Error> {
    let seats = Arc::new(FairQueue::new(seats));
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&SeatsLayer { seats })
        .build())
}

struct SeatsLayer {
    seats: Arc<FairQueue>,
}

impl<S> Layer<S> for SeatsLayer
where
    S: Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError> + Send + 'static,
    S::Future: Send + 'static,
{
    type Service = Seated<S::Future>;

    fn layer(&self, inner: S) -> Self::Service {
        Seated {
            inner: Buffer::new(inner, DISPATCH_QUEUE),
            seats: self.seats.clone(),
        }
    }
}

/// The client's service: a request takes a seat of its namespace, then goes on.
struct Seated<F> {
    inner: Buffer<Request<Body>, F>,
    seats: Arc<FairQueue>,
}

impl<F> Service<Request<Body>> for Seated<F>
where
    F: std::future::Future<Output = Result<Response<Box<DynBody>>, BoxError>> + Send + 'static,
{
    type Response = Response<SeatedBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    /// Always ready: readiness is awaited per request, once it has a seat, so a request
    /// waiting for its seat holds up no other namespace's.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (mut inner, seats) = (self.inner.clone(), self.seats.clone());
        Box::pin(async move {
            let seat = match party(&request) {
                Some(party) => Some(seats.enter_owned(party).await),
                None => None,
            };
            let response = inner.ready().await?.call(request).await?;
            Ok(response.map(|body| SeatedBody { body, _seat: seat }))
        })
    }
}

/// The party a request waits as: the namespace in its path (`""` for cluster-scoped
/// resources); `None` for a watch, which holds its connection as long as it runs.
fn party(request: &Request<Body>) -> Option<&str> {
    let uri = request.uri();
    let watching = uri
        .query()
        .is_some_and(|query| query.split('&').any(|pair| pair == "watch=true" || pair == "watch=1"));
    if watching {
        return None;
    }
    let mut segments = uri.path().split('/');
    Some(
        segments
            .by_ref()
            .find(|segment| *segment == "namespaces")
            .and_then(|_| segments.next())
            .unwrap_or_default(),
    )
}

/// An answer's body, holding its request's seat until it is read or dropped.
struct SeatedBody {
    body: Box<DynBody>,
    _seat: Option<Seat<Arc<FairQueue>>>,
}

impl http_body::Body for SeatedBody {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use http_body_util::BodyExt;

    use super::*;

    fn request(uri: &str) -> Request<Body> {
        Request::builder().uri(uri).body(Body::empty()).expect("a request")
    }

    #[test]
    fn a_request_waits_as_the_namespace_of_its_path_and_a_watch_not_at_all() {
        let cases = [
            (
                "/apis/edgeplatform.io/v1alpha1/namespaces/a/containerappwatches/w/status",
                Some("a"),
            ),
            ("/api/v1/namespaces/b/secrets/key", Some("b")),
            ("/apis/events.k8s.io/v1/namespaces/c/events", Some("c")),
            ("/apis/edgeplatform.io/v1alpha1/accesslistclaims/x", Some("")),
            (
                "/apis/edgeplatform.io/v1alpha1/namespaces/a/accesslistconfigs?limit=2",
                Some("a"),
            ),
            (
                "/apis/edgeplatform.io/v1alpha1/accesslistconfigs?watch=true&resourceVersion=1",
                None,
            ),
            ("/api/v1/namespaces/b/secrets?allowWatchBookmarks=true&watch=1", None),
            (
                "/apis/edgeplatform.io/v1alpha1/accesslistconfigs?watchers=true",
                Some(""),
            ),
        ];
        for (uri, expected) in cases {
            assert_eq!(party(&request(uri)), expected, "{uri}");
        }
    }

    /// A service that answers after `work`, counting the requests it holds at once.
    fn slow_apiserver(
        work: Duration,
        held: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
    ) -> tower::util::BoxService<Request<Body>, Response<Box<DynBody>>, BoxError> {
        tower::util::BoxService::new(tower::service_fn(move |_: Request<Body>| {
            let (held, most) = (held.clone(), most.clone());
            Box::pin(async move {
                let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(work).await;
                held.fetch_sub(1, Ordering::SeqCst);
                let body = http_body_util::Full::new(bytes::Bytes::from_static(b"{}"));
                Ok(Response::new(Box::new(body.map_err(BoxError::from)) as Box<DynBody>))
            })
        }))
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_the_seats_run_at_once_and_a_watch_takes_none() {
        let (held, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let layer = SeatsLayer {
            seats: Arc::new(FairQueue::new(4)),
        };
        let service = layer.layer(slow_apiserver(Duration::from_millis(50), held.clone(), most.clone()));
        let service = Arc::new(tokio::sync::Mutex::new(service));
        let writes = (0..100).map(|i| {
            let service = service.clone();
            tokio::spawn(async move {
                let uri = format!("/apis/edgeplatform.io/v1alpha1/namespaces/a/containerappwatches/w{i}/status");
                let answer = service.lock().await.call(request(&uri));
                let body = answer.await.expect("an answer").into_body();
                body.collect().await.expect("a body");
            })
        });
        let writes: Vec<_> = writes.collect();
        // A watch is not held behind the hundred writes.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let watch = service
            .lock()
            .await
            .call(request("/apis/edgeplatform.io/v1alpha1/containerappwatches?watch=true"));
        tokio::time::timeout(Duration::from_millis(60), watch)
            .await
            .expect("the watch answered at once")
            .expect("an answer");
        for write in writes {
            write.await.expect("no panic");
        }
        assert_eq!(most.load(Ordering::SeqCst), 4 + 1, "four writes and the watch");
    }
}
