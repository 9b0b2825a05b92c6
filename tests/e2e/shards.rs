//! Shards as Flux runs them: two operators on one control plane, each watching the
//! objects of its label selector with its own Lease. Each object is written by exactly
//! one shard; an object relabelled to the other shard is taken over from its status,
//! without a second write, and the new shard writes its next change. Two objects on one
//! configuration in two shards share its one claim record: one writes.

use std::time::Duration;

use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use edge_operator::sim::document::SimAccessList;
use kube::Api;
use serde_json::json;

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::{Manifest, stream};
use crate::support::operator::{HasConditions, Operator, eventually, wait_for_condition};
use crate::support::sim::{example_fixtures, journal_count, platform_list, start};

const WAIT: Duration = Duration::from_secs(60);
const SHARD_LABEL: &str = "sharding.edgeplatform.io/key";
/// The configurations of the shards' objects: 9500 for shard a, 9501 for shard b.
const FIRST_CONFIGURATION: i64 = 9500;

struct Shard {
    operator: Operator,
}

impl Shard {
    fn start(namespace: &str, api_url: &str, key: &str) -> Self {
        let selector = format!("{SHARD_LABEL}={key}");
        let lease = format!("edge-operator-shard-{key}");
        let operator = Operator::start(
            namespace,
            api_url,
            &[
                "--watch-label-selector",
                &selector,
                "--leader-elect",
                "--lease-name",
                &lease,
                "--lease-namespace",
                namespace,
                // Which objects a shard holds shows in its per-object series.
                "--object-metrics",
            ],
        );
        Self { operator }
    }

    async fn patches(&self) -> Option<f64> {
        self.operator
            .sample(r#"edge_operator_platform_requests_total{operation="update_access_list",status_class="2xx"}"#)
            .await
    }

    async fn reconciles(&self) -> Option<f64> {
        self.operator
            .sample(r#"edge_operator_reconciles_total{kind="AccessListConfig",result="success"}"#)
            .await
    }

    async fn shows(&self, name: &str) -> bool {
        let text = self.operator.metrics().await.unwrap_or_default();
        text.contains(&format!("name=\"{name}\""))
    }
}

fn object(namespace: &str, name: &str, shard: &str, configuration: i64, enabled: bool) -> Manifest {
    Manifest::access_list(
        namespace,
        name,
        json!({"shieldZoneId": 1001, "configurationId": configuration, "enabled": enabled}),
    )
    .labelled(SHARD_LABEL, shard)
}

fn is_ready(object: &AccessListConfig) -> bool {
    object.condition("Ready").is_some_and(|c| {
        c.status == edge_operator::resources::ConditionStatus::True
            && c.observed_generation == object.metadata.generation
    })
}

#[tokio::test]
async fn two_shards_split_the_objects_and_hand_one_over_without_a_second_write() {
    let mut document = example_fixtures();
    for (index, name) in ["shard a's list", "shard b's list"].into_iter().enumerate() {
        let list = SimAccessList::new(FIRST_CONFIGURATION + index as i64, name, false, 2);
        document.shield_zones[0].access_lists.push(list);
    }
    let sim = start(document).await;
    let namespace = TestNamespace::create("shards");
    let ns = namespace.name.as_str();
    let shard_a = Shard::start(ns, &sim.base_url(), "a");
    let shard_b = Shard::start(ns, &sim.base_url(), "b");
    cluster().apply(stream([
        object(ns, "list-a", "a", FIRST_CONFIGURATION, true),
        object(ns, "list-b", "b", FIRST_CONFIGURATION + 1, true),
    ]));
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, ns);
    eventually("both objects Ready", WAIT, || async {
        let objects = api.list(&Default::default()).await.ok()?.items;
        (objects.len() == 2 && objects.iter().all(is_ready)).then_some(())
    })
    .await;

    // Each configuration written once, each by its own shard.
    let configuration = |index: i64| format!("configurations/{}", FIRST_CONFIGURATION + index);
    assert_eq!(journal_count(&sim, "PATCH", &configuration(0)), 1);
    assert_eq!(journal_count(&sim, "PATCH", &configuration(1)), 1);
    assert_eq!(shard_a.patches().await, Some(1.0));
    assert_eq!(shard_b.patches().await, Some(1.0));
    assert!(shard_a.shows("list-a").await && !shard_a.shows("list-b").await);
    assert!(shard_b.shows("list-b").await && !shard_b.shows("list-a").await);

    // list-a moves to shard b: b takes it from its status, nobody writes the platform.
    let before = shard_b.reconciles().await.unwrap_or_default();
    let (ok, _, stderr) = cluster().kubectl(
        &[
            "label",
            "-n",
            ns,
            "accesslistconfig",
            "list-a",
            &format!("{SHARD_LABEL}=b"),
            "--overwrite",
        ],
        None,
    );
    assert!(ok, "{stderr}");
    eventually("shard b to reconcile list-a", WAIT, || async {
        let reconciled = shard_b.reconciles().await? > before && shard_b.shows("list-a").await;
        (reconciled && !shard_a.shows("list-a").await).then_some(())
    })
    .await;
    // Shard b looks at it once more: still nothing to write.
    let handed_over = shard_b.reconciles().await.unwrap_or_default();
    let (ok, _, stderr) = cluster().kubectl(
        &[
            "annotate",
            "-n",
            ns,
            "accesslistconfig",
            "list-a",
            "edgeplatform.io/reconcile-requested-at=look-again",
        ],
        None,
    );
    assert!(ok, "{stderr}");
    eventually("shard b to look at list-a again", WAIT, || async {
        (shard_b.reconciles().await? > handed_over).then_some(())
    })
    .await;
    assert_eq!(
        journal_count(&sim, "PATCH", &configuration(0)),
        1,
        "handed over without a write"
    );
    assert_eq!(shard_b.patches().await, Some(1.0));

    // Its next change is shard b's to write, and shard a's no more.
    cluster().apply(object(ns, "list-a", "b", FIRST_CONFIGURATION, false));
    eventually("shard b to write list-a's change", WAIT, || async {
        (platform_list(&sim, FIRST_CONFIGURATION) == Some((false, 2))).then_some(())
    })
    .await;
    assert_eq!(journal_count(&sim, "PATCH", &configuration(0)), 2);
    assert_eq!(shard_b.patches().await, Some(2.0));
    assert_eq!(shard_a.patches().await, Some(1.0));
}

#[tokio::test]
async fn two_objects_on_one_configuration_in_two_shards_have_one_writer() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("shard-claims");
    let ns = namespace.name.as_str();
    let _shard_a = Shard::start(ns, &sim.base_url(), "a");
    let _shard_b = Shard::start(ns, &sim.base_url(), "b");
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, ns);
    cluster().apply(object(ns, "writer", "a", 9101, true));
    wait_for_condition(&api, "writer", "Ready", Some("True"), "InSync", WAIT).await;
    cluster().apply(object(ns, "rival", "b", 9101, false));
    let rival = wait_for_condition(&api, "rival", "Ready", Some("False"), "ConfigurationClaimed", WAIT).await;
    let said = rival.condition("Ready").map(|c| c.message).unwrap_or_default();
    assert!(said.contains("AccessListConfig \"writer\""), "{said}");
    assert_eq!(platform_list(&sim, 9101), Some((true, 2)), "the writer's value");
    assert_eq!(journal_count(&sim, "PATCH", "configurations/9101"), 1, "written once");
}
