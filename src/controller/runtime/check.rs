//! `edge-operator check`, the chart's `helm test`: the operator answers ready, and every
//! custom resource kind round-trips through the apiserver's schema (a server-side dry
//! run of each documented example keeps every field; a spec the CRD forbids is refused).

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DynamicObject, PostParams};
use serde::Serialize;

use crate::controller::framework::pipeline::kind::RefusedExample;
use crate::controller::kinds::Kind;

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("the operator did not answer ready at {url} within {seconds} s: {last}")]
    NotReady { url: String, seconds: u64, last: String },
    #[error("the example {kind} is not valid: {source}")]
    Example { kind: String, source: serde_yaml::Error },
    #[error("the apiserver refused the example {kind}: {source}")]
    Refused { kind: String, source: kube::Error },
    #[error(
        "the apiserver dropped or changed {kind} spec.{field}: the installed CRD does not match this operator; apply its CRDs"
    )]
    Pruned { kind: String, field: String },
    #[error(
        "the apiserver accepted an object of kind {kind} {rule}: the installed CRD lacks this operator's validation rules; apply its CRDs"
    )]
    NotValidated { kind: String, rule: String },
    #[error("the validation check failed unexpectedly: {0}")]
    Unexpected(kube::Error),
}

/// Checks a running installation, waiting up to `ready_within` for the operator to be
/// ready; answers a line per check passed.
pub async fn check_installation(
    client: kube::Client,
    health_url: &str,
    ready_within: Duration,
    namespace: &str,
) -> Result<Vec<String>, CheckError> {
    let mut passed = vec![operator_ready(health_url, ready_within).await?];
    for kind in Kind::all() {
        passed.push(round_trip(&client, namespace, *kind).await?);
    }
    for kind in Kind::all() {
        if let Some(refused) = kind.refused_example() {
            passed.push(forbidden_spec_refused(&client, namespace, *kind, refused).await?);
        }
    }
    Ok(passed)
}

async fn operator_ready(health_url: &str, within: Duration) -> Result<String, CheckError> {
    let url = format!("{}/readyz", health_url.trim_end_matches('/'));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| not_ready(&url, within, e.to_string()))?;
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let last = match http.get(&url).send().await {
            Ok(response) if response.status().is_success() => return Ok(format!("the operator is ready ({url})")),
            Ok(response) => format!(
                "{} {}",
                response.status(),
                response.text().await.unwrap_or_default().trim()
            ),
            Err(error) => error.to_string(),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(not_ready(&url, within, last));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn not_ready(url: &str, within: Duration, last: String) -> CheckError {
    CheckError::NotReady {
        url: url.to_string(),
        seconds: within.as_secs(),
        last,
    }
}

fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        field_manager: Some("edge-operator-check".to_string()),
    }
}

/// A server-side dry run of the example; every field of its spec must come back as sent.
async fn round_trip(client: &kube::Client, namespace: &str, of: Kind) -> Result<String, CheckError> {
    let kind = of.name().to_string();
    let (api, object) = dry_run_example(client, namespace, of)?;
    let returned = api
        .create(&dry_run(), &object)
        .await
        .map_err(|source| CheckError::Refused {
            kind: kind.clone(),
            source,
        })?;
    if let Some(field) = first_not_kept(&spec_of(&object), &spec_of(&returned), "") {
        return Err(CheckError::Pruned { kind, field });
    }
    Ok(format!(
        "{kind} {} round-trips through the apiserver",
        returned.name_any()
    ))
}

/// The first member of `sent` that `returned` drops or changes, as a dotted path; the
/// members the apiserver adds (defaults) do not count.
fn first_not_kept(sent: &serde_json::Value, returned: &serde_json::Value, at: &str) -> Option<String> {
    match (sent, returned) {
        (serde_json::Value::Object(sent), serde_json::Value::Object(returned)) => {
            sent.iter().find_map(|(name, value)| {
                let path = if at.is_empty() {
                    name.clone()
                } else {
                    format!("{at}.{name}")
                };
                match returned.get(name) {
                    Some(kept) => first_not_kept(value, kept, &path),
                    None => Some(path),
                }
            })
        }
        _ => (sent != returned).then(|| at.to_string()),
    }
}

/// The example of kind `of`, to create in `namespace` (a dry run) under a name the
/// apiserver generates, so the dry runs never collide with real objects.
fn dry_run_example(
    client: &kube::Client,
    namespace: &str,
    of: Kind,
) -> Result<(Api<DynamicObject>, DynamicObject), CheckError> {
    let mut object: DynamicObject = serde_yaml::from_str(of.example()).map_err(|source| CheckError::Example {
        kind: of.name().to_string(),
        source,
    })?;
    object.metadata.name = None;
    object.metadata.generate_name = Some("edge-operator-check-".to_string());
    object.metadata.namespace = Some(namespace.to_string());
    let api = Api::namespaced_with(client.clone(), namespace, &of.api_resource());
    Ok((api, object))
}

fn spec_of<K: Serialize>(object: &K) -> serde_json::Value {
    serde_json::to_value(object)
        .map(|value| value["spec"].clone())
        .unwrap_or_default()
}

/// The CRD's validation rules are installed: a spec they forbid is refused.
async fn forbidden_spec_refused(
    client: &kube::Client,
    namespace: &str,
    of: Kind,
    refused: RefusedExample,
) -> Result<String, CheckError> {
    let kind = of.name();
    let (api, mut object) = dry_run_example(client, namespace, of)?;
    json_patch::merge(&mut object.data["spec"], &refused.spec);
    match api.create(&dry_run(), &object).await {
        Err(kube::Error::Api(status)) if status.code == 422 => {
            Ok(format!("an object of kind {kind} {} is refused", refused.rule))
        }
        Ok(_) => Err(CheckError::NotValidated {
            kind: kind.to_string(),
            rule: refused.rule.to_string(),
        }),
        Err(error) => Err(CheckError::Unexpected(error)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A mock apiserver that answers each create with `answer(body)`: (status, object).
    fn apiserver(answer: fn(Value) -> (u16, Value)) -> kube::Client {
        crate::controller::framework::mock_apiserver::client(move |request, body| {
            assert!(
                request.uri.query().is_some_and(|q| q.contains("dryRun=All")),
                "only dry runs: {}",
                request.uri
            );
            answer(body)
        })
    }

    fn kind(name: &str) -> Kind {
        Kind::of(name).expect("a registered kind")
    }

    fn named(mut object: Value) -> Value {
        object["metadata"]["name"] = json!("edge-operator-check-x1");
        object
    }

    #[test]
    fn defaults_the_apiserver_adds_are_kept_and_a_dropped_nested_member_is_named() {
        let sent = serde_json::json!({"appId": "a", "securityEvents": {"window": "1h", "top": 3}});
        let defaulted = serde_json::json!({"appId": "a", "interval": "60s", "securityEvents": {"window": "1h", "top": 3, "filters": []}});
        assert_eq!(first_not_kept(&sent, &defaulted, ""), None);
        let pruned = serde_json::json!({"appId": "a", "securityEvents": {"window": "1h"}});
        assert_eq!(
            first_not_kept(&sent, &pruned, "").as_deref(),
            Some("securityEvents.top")
        );
        let changed = serde_json::json!({"appId": "b", "securityEvents": {"window": "1h", "top": 3}});
        assert_eq!(first_not_kept(&sent, &changed, "").as_deref(), Some("appId"));
    }

    #[tokio::test]
    async fn a_field_the_apiserver_drops_is_named() {
        let client = apiserver(|mut object| {
            if let Some(spec) = object["spec"].as_object_mut() {
                spec.remove("deletionPolicy");
            }
            (201, named(object))
        });
        let error = round_trip(&client, "ns", kind("AccessListConfig"))
            .await
            .expect_err("a pruned field fails the check");
        assert!(
            matches!(&error, CheckError::Pruned { kind, field } if kind == "AccessListConfig" && field == "deletionPolicy"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn an_example_that_comes_back_whole_passes_under_a_generated_name() {
        let client = apiserver(|object| {
            assert_eq!(object["metadata"]["generateName"], "edge-operator-check-");
            assert!(object["metadata"]["name"].is_null(), "never the example's own name");
            (201, named(object))
        });
        let passed = round_trip(&client, "ns", kind("ContainerAppWatch"))
            .await
            .expect("the example round-trips");
        assert_eq!(
            passed,
            "ContainerAppWatch edge-operator-check-x1 round-trips through the apiserver"
        );
    }

    #[tokio::test]
    async fn a_crd_without_the_validation_rules_is_reported() {
        let access_lists = kind("AccessListConfig");
        let refused_example = || access_lists.refused_example().expect("the kind has validation rules");
        let accepted = apiserver(|object| {
            assert_eq!(
                object["spec"]["configurationId"], 1,
                "the example changed as the kind says"
            );
            assert!(object["spec"]["listName"].is_string(), "the rest of the example kept");
            assert_eq!(object["metadata"]["generateName"], "edge-operator-check-");
            (201, named(object))
        });
        let error = forbidden_spec_refused(&accepted, "ns", access_lists, refused_example())
            .await
            .expect_err("accepted");
        assert!(matches!(error, CheckError::NotValidated { .. }), "{error}");

        let refused = apiserver(|_| {
            (
                422,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Invalid", "code": 422}),
            )
        });
        let passed = forbidden_spec_refused(&refused, "ns", access_lists, refused_example())
            .await
            .expect("refused as it should be");
        assert!(
            passed.ends_with("naming both a configurationId and a listName is refused"),
            "{passed}"
        );
    }
}
