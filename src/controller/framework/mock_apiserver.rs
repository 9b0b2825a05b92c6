//! A mock apiserver for unit tests of the reconcile glue (tower-test): each request is
//! answered with what a handler returns for it.

use http::request::Parts;
use http::{Request, Response};
use kube::client::Body;
use serde_json::Value;

/// A client whose requests `answer` handles: it gets each request's head and JSON body
/// (null when empty or not JSON) and returns the status and the JSON object to answer.
pub(crate) fn client<F>(answer: F) -> kube::Client
where
    F: Fn(&Parts, Value) -> (u16, Value) + Send + 'static,
{
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    tokio::spawn(async move {
        while let Some((request, respond)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let body = body.collect_bytes().await.unwrap_or_default();
            let (status, object) = answer(&parts, serde_json::from_slice(&body).unwrap_or(Value::Null));
            let response = Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(&object).unwrap_or_default()));
            match response {
                Ok(response) => respond.send_response(response),
                Err(error) => panic!("mock answer: {error}"),
            }
        }
    });
    kube::Client::new(service, "default")
}
