//! The chart's knobs that platform teams expect (names, labels, security contexts,
//! probes, volumes, containers, scheduling of each Pod, update strategy, Service,
//! ServiceMonitor and disruption budget settings), rendered with `helm template` and no
//! cluster, as Argo CD renders them.

use serde::Deserialize;

use crate::chart::API_URL;
use crate::support::helm::{chart, helm_offline};

/// Every object the chart renders with `values` (a YAML document) and the emulator on,
/// or helm's error.
fn try_render(values: &str) -> Result<Vec<serde_yaml::Value>, String> {
    let file = tempfile::NamedTempFile::new().expect("values file");
    std::fs::write(file.path(), values).expect("values written");
    let chart = chart();
    let path = file.path().display().to_string();
    let (ok, manifests, err) = helm_offline(&[
        "template",
        "knobs",
        &chart,
        API_URL,
        "--set=emulator.enabled=true",
        "--set=metrics.serviceMonitor.enabled=true",
        "-f",
        &path,
    ]);
    if !ok {
        return Err(err);
    }
    Ok(serde_yaml::Deserializer::from_str(&manifests)
        .filter_map(|document| serde_yaml::Value::deserialize(document).ok())
        .filter(|object| !object.is_null())
        .collect())
}

fn render(values: &str) -> Vec<serde_yaml::Value> {
    try_render(values).unwrap_or_else(|err| panic!("{values}: {err}"))
}

/// The one object of `kind` named `name`.
fn object<'a>(objects: &'a [serde_yaml::Value], kind: &str, name: &str) -> &'a serde_yaml::Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn pod_specs(objects: &[serde_yaml::Value]) -> Vec<(String, serde_yaml::Value)> {
    objects
        .iter()
        .filter_map(|object| {
            let name = object["metadata"]["name"].as_str()?.to_string();
            match object["kind"].as_str()? {
                "Deployment" => Some((name, object["spec"]["template"]["spec"].clone())),
                "Pod" => Some((name, object["spec"].clone())),
                _ => None,
            }
        })
        .collect()
}

const KNOBS: &str = r#"
nameOverride: edge
fullnameOverride: edge-ops
commonLabels: {team: platform}
annotations: {deploy.example.com/owner: platform}
podSecurityContext: {runAsUser: null, runAsGroup: null, fsGroup: null}
securityContext: {readOnlyRootFilesystem: false}
livenessProbe: {periodSeconds: 7, failureThreshold: 5}
readinessProbe: {timeoutSeconds: 3}
extraVolumes: [{name: extra, emptyDir: {}}]
extraVolumeMounts: [{name: extra, mountPath: /extra}]
envFrom: [{configMapRef: {name: operator-env}}]
extraContainers: [{name: proxy, image: "registry.example.com/proxy:1", securityContext: {readOnlyRootFilesystem: false}}]
revisionHistoryLimit: 4
terminationGracePeriodSeconds: 45
replicas: 3
strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}
podDisruptionBudget: {enabled: true, maxUnavailable: 1}
nodeSelector: {disk: ssd}
tolerations: [{key: dedicated, operator: Exists}]
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: In, values: [ssd]}]}]}}}
metrics:
  service: {annotations: {prometheus.io/scrape: "false"}}
  serviceMonitor: {scrapeTimeout: 10s, relabelings: [{action: labeldrop, regex: pod}], metricRelabelings: [{action: drop, sourceLabels: [__name__], regex: process_.*}], namespace: monitoring, annotations: {owner: platform}, targetLabels: [team]}
"#;

#[test]
fn the_knobs_platform_teams_expect_reach_every_object_and_pod() {
    let objects = render(KNOBS);
    for object in &objects {
        let labels = &object["metadata"]["labels"];
        if object["kind"] != "CustomResourceDefinition" {
            assert_eq!(labels["team"], "platform", "commonLabels: {object:?}");
        }
    }
    let operator = objects
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "edge-ops")
        .expect("fullnameOverride names the operator's Deployment");
    assert_eq!(
        operator["metadata"]["annotations"]["deploy.example.com/owner"],
        "platform"
    );
    assert_eq!(
        operator["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
        "edge"
    );
    let pods = pod_specs(&objects);
    assert_eq!(pods.len(), 3, "the operator's, the emulator's and the test's: {pods:?}");
    for (name, pod) in &pods {
        assert_eq!(pod["nodeSelector"]["disk"], "ssd", "{name}");
        assert_eq!(pod["tolerations"][0]["key"], "dedicated", "{name}");
        assert!(pod["affinity"]["nodeAffinity"].is_mapping(), "{name}");
        let context = &pod["securityContext"];
        for member in ["runAsUser", "runAsGroup", "fsGroup"] {
            assert!(
                context.get(member).is_none(),
                "{name}: {member} left to the platform: {context:?}"
            );
        }
        assert_eq!(
            context["runAsNonRoot"], true,
            "{name}: the rest of the restricted profile stays"
        );
        let container = &pod["containers"][0];
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], false, "{name}");
        assert_eq!(
            container["securityContext"]["allowPrivilegeEscalation"], false,
            "{name}"
        );
    }
    let container = &operator["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["livenessProbe"]["periodSeconds"], 7);
    assert_eq!(container["livenessProbe"]["failureThreshold"], 5);
    assert_eq!(container["readinessProbe"]["timeoutSeconds"], 3);
    assert_eq!(container["readinessProbe"]["periodSeconds"], 10, "a default kept");
    assert_eq!(container["envFrom"][0]["configMapRef"]["name"], "operator-env");
    let mounts = container["volumeMounts"].as_sequence().expect("mounts");
    assert!(mounts.iter().any(|m| m["mountPath"] == "/extra"), "{mounts:?}");
    let volumes = operator["spec"]["template"]["spec"]["volumes"]
        .as_sequence()
        .expect("volumes");
    assert!(volumes.iter().any(|v| v["name"] == "extra"), "{volumes:?}");
    let sidecar = &operator["spec"]["template"]["spec"]["containers"][1];
    assert_eq!(sidecar["name"], "proxy", "extraContainers");
    assert_eq!(sidecar["image"], "registry.example.com/proxy:1");
    let context = &sidecar["securityContext"];
    assert_eq!(
        context["readOnlyRootFilesystem"], false,
        "its own field kept: {context:?}"
    );
    assert_eq!(
        context["allowPrivilegeEscalation"], false,
        "the chart's for the rest: {context:?}"
    );
    assert_eq!(context["capabilities"]["drop"][0], "ALL", "{context:?}");
    assert_eq!(
        operator["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
        45
    );
    assert_eq!(operator["spec"]["revisionHistoryLimit"], 4);
    let emulator = object(&objects, "Deployment", "edge-ops-emulator");
    assert_eq!(emulator["spec"]["revisionHistoryLimit"], 4, "the emulator's too");
    let strategy = &operator["spec"]["strategy"];
    assert_eq!(strategy["type"], "RollingUpdate", "three replicas elect: {strategy:?}");
    assert_eq!(strategy["rollingUpdate"]["maxSurge"], 0, "{strategy:?}");
    assert_eq!(strategy["rollingUpdate"]["maxUnavailable"], 1, "{strategy:?}");
    let budget = object(&objects, "PodDisruptionBudget", "edge-ops");
    assert_eq!(budget["spec"]["maxUnavailable"], 1);
    assert!(budget["spec"].get("minAvailable").is_none(), "{budget:?}");
    let service = objects
        .iter()
        .find(|o| o["kind"] == "Service" && o["metadata"]["name"] == "edge-ops-metrics")
        .expect("the metrics Service");
    assert_eq!(service["metadata"]["annotations"]["prometheus.io/scrape"], "false");
    let monitor = objects
        .iter()
        .find(|o| o["kind"] == "ServiceMonitor")
        .expect("a ServiceMonitor");
    assert_eq!(monitor["metadata"]["namespace"], "monitoring");
    assert_eq!(monitor["metadata"]["annotations"]["owner"], "platform");
    assert_eq!(
        monitor["spec"]["namespaceSelector"]["matchNames"][0], "default",
        "from its own namespace it selects the release's Service"
    );
    assert_eq!(monitor["spec"]["targetLabels"][0], "team");
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["scrapeTimeout"], "10s");
    assert_eq!(endpoint["relabelings"][0]["action"], "labeldrop");
    assert_eq!(endpoint["metricRelabelings"][0]["action"], "drop");
}

#[test]
fn by_default_every_pod_runs_the_restricted_profile_and_nothing_is_scheduled_anywhere_in_particular() {
    let objects = render("{}");
    let pods = pod_specs(&objects);
    assert_eq!(pods.len(), 3, "{pods:?}");
    for (name, pod) in &pods {
        let context = &pod["securityContext"];
        assert_eq!(context["runAsUser"], 65532, "{name}");
        assert_eq!(context["seccompProfile"]["type"], "RuntimeDefault", "{name}");
        let container = &pod["containers"][0]["securityContext"];
        assert_eq!(container["capabilities"]["drop"][0], "ALL", "{name}");
        assert_eq!(container["readOnlyRootFilesystem"], true, "{name}");
        for member in ["nodeSelector", "tolerations", "affinity"] {
            assert!(pod.get(member).is_none(), "{name}: {member}");
        }
        assert_eq!(pod["containers"].as_sequence().map(Vec::len), Some(1), "{name}");
    }
    let operator = object(&objects, "Deployment", "knobs-edge-operator");
    assert_eq!(operator["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        operator["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
        30
    );
    let monitor = object(&objects, "ServiceMonitor", "knobs-edge-operator");
    assert_eq!(monitor["metadata"]["namespace"], "default", "the release's namespace");
    for member in ["namespaceSelector", "targetLabels"] {
        assert!(monitor["spec"].get(member).is_none(), "{member}: {monitor:?}");
    }
    let budget = render("{replicas: 2, podDisruptionBudget: {enabled: true}}");
    let budget = object(&budget, "PodDisruptionBudget", "knobs-edge-operator");
    assert_eq!(budget["spec"]["minAvailable"], 1, "neither set: one stays available");
}

#[test]
fn each_pod_may_be_scheduled_apart_and_otherwise_runs_where_the_top_level_values_say() {
    let objects = render(
        r#"
nodeSelector: {disk: ssd}
tolerations: [{key: dedicated, operator: Exists}]
affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: []}}
emulator:
  nodeSelector: {pool: tests}
  tolerations: []
tests:
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [tests]}]}]}}}
"#,
    );
    let pods: std::collections::BTreeMap<String, serde_yaml::Value> = pod_specs(&objects).into_iter().collect();
    let operator = &pods["knobs-edge-operator"];
    assert_eq!(operator["nodeSelector"]["disk"], "ssd");
    assert_eq!(operator["tolerations"][0]["key"], "dedicated");
    assert!(operator["affinity"]["podAntiAffinity"].is_mapping(), "{operator:?}");
    let emulator = &pods["knobs-edge-operator-emulator"];
    assert_eq!(emulator["nodeSelector"]["pool"], "tests", "its own: {emulator:?}");
    assert!(emulator["nodeSelector"].get("disk").is_none(), "replaced, not merged");
    assert!(emulator.get("tolerations").is_none(), "an empty one of its own: none");
    assert!(
        emulator["affinity"]["podAntiAffinity"].is_mapping(),
        "unset: the top-level"
    );
    let test = &pods["knobs-edge-operator-test"];
    assert_eq!(test["nodeSelector"]["disk"], "ssd", "unset: the top-level");
    assert_eq!(test["tolerations"][0]["key"], "dedicated", "unset: the top-level");
    assert!(test["affinity"]["nodeAffinity"].is_mapping(), "its own: {test:?}");
    assert!(test["affinity"].get("podAntiAffinity").is_none(), "{test:?}");
}

/// The operator Deployment's update strategy with `values`, or helm's error.
fn strategy(values: &str) -> Result<serde_yaml::Value, String> {
    try_render(values).map(|objects| object(&objects, "Deployment", "knobs-edge-operator")["spec"]["strategy"].clone())
}

#[test]
fn one_replica_is_replaced_with_recreate_without_reading_the_cluster_and_more_are_rolled() {
    // Rendered with no cluster: what Argo CD applies, where a `lookup` of the running
    // Deployment finds nothing.
    for values in [
        "{leaderElection: {enabled: false}}",
        "{}",
        "{strategy: {type: Recreate}}",
        "{replicas: 2, strategy: {type: Recreate}}",
    ] {
        let strategy = strategy(values).unwrap_or_else(|err| panic!("{values}: {err}"));
        assert_eq!(strategy["type"], "Recreate", "{values}: {strategy:?}");
        assert!(
            strategy.get("rollingUpdate").is_some_and(serde_yaml::Value::is_null),
            "{values}: the live object's defaulted rollingUpdate is removed: {strategy:?}"
        );
    }
    for values in [
        "{leaderElection: {enabled: false}, strategy: {type: RollingUpdate}}",
        "{leaderElection: {enabled: false}, strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}}",
        "{strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1}}}",
    ] {
        let err = strategy(values).expect_err(values);
        assert!(
            err.contains("with one replica") && err.contains("Recreate") && err.contains("replicas above 1"),
            "{values}: says why and what to do: {err}"
        );
    }
    let err = strategy("{replicas: 2, strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}}")
        .expect_err("Recreate with rollingUpdate");
    assert!(err.contains("strategy.rollingUpdate"), "{err}");

    let rolled = strategy("{replicas: 2}").expect("two replicas");
    assert_eq!(rolled["type"], "RollingUpdate", "{rolled:?}");
    assert_eq!(
        rolled["rollingUpdate"]["maxSurge"], 1,
        "one new Pod beside the electing ones: {rolled:?}"
    );
    assert_eq!(rolled["rollingUpdate"]["maxUnavailable"], 0, "{rolled:?}");
    let objects = render("{replicas: 2, leaderElection: {enabled: false}}");
    let operator = object(&objects, "Deployment", "knobs-edge-operator");
    let args = serde_yaml::to_string(&operator["spec"]["template"]["spec"]["containers"][0]["args"]).expect("args");
    assert!(
        args.contains("--leader-elect"),
        "more than one replica always elect: {args}"
    );
    let asked =
        strategy("{replicas: 2, strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}}}")
            .expect("a strategy of the user's");
    assert_eq!(asked["rollingUpdate"]["maxSurge"], "25%", "{asked:?}");
}

#[test]
fn a_budget_takes_min_available_or_max_unavailable_never_both_nor_one_that_blocks_drains() {
    let objects = render("{replicas: 3, podDisruptionBudget: {enabled: true, maxUnavailable: 34%}}");
    let budget = object(&objects, "PodDisruptionBudget", "knobs-edge-operator");
    assert_eq!(budget["spec"]["maxUnavailable"], "34%");
    for (values, says) in [
        (
            "{replicas: 3, podDisruptionBudget: {enabled: true, minAvailable: 1, maxUnavailable: 1}}",
            "not both",
        ),
        (
            "{replicas: 3, podDisruptionBudget: {enabled: true, maxUnavailable: 0}}",
            "block every node drain",
        ),
        (
            "{replicas: 3, podDisruptionBudget: {enabled: true, maxUnavailable: 0%}}",
            "block every node drain",
        ),
        (
            "{replicas: 3, podDisruptionBudget: {enabled: true, minAvailable: 3}}",
            "must be below replicas",
        ),
    ] {
        let err = try_render(values).expect_err(values);
        assert!(err.contains(says), "{values}: {err}");
    }
}

#[test]
fn the_schema_rejects_wrong_types_of_the_new_knobs_and_names_them() {
    for (values, named) in [
        ("{revisionHistoryLimit: ten}", "revisionHistoryLimit"),
        ("{terminationGracePeriodSeconds: -1}", "terminationGracePeriodSeconds"),
        ("{strategy: {type: Rolling}}", "strategy"),
        ("{strategy: {rollingUpdate: {maxSurge: one}}}", "maxSurge"),
        ("{extraContainers: [{image: busybox}]}", "extraContainers"),
        ("{extraContainers: {name: proxy}}", "extraContainers"),
        ("{metrics: {serviceMonitor: {targetLabels: team}}}", "targetLabels"),
        ("{metrics: {serviceMonitor: {namespace: Monitoring}}}", "namespace"),
        (
            "{metrics: {serviceMonitor: {annotations: {scrape: false}}}}",
            "annotations",
        ),
        ("{podDisruptionBudget: {maxUnavailable: one}}", "maxUnavailable"),
        ("{emulator: {nodeSelector: [disk]}}", "nodeSelector"),
        ("{emulator: {tolerations: {key: dedicated}}}", "tolerations"),
        ("{tests: {nodeselector: {disk: ssd}}}", "nodeselector"),
        ("{tests: {affinity: []}}", "affinity"),
    ] {
        let err = try_render(values).expect_err(values);
        assert!(
            err.contains("schema") && err.contains(named),
            "{values}: the schema names {named}: {err}"
        );
    }
}

/// The chart rendered as `helm template` renders it for Argo CD: no cluster to look up.
fn template(values: &[&str]) -> String {
    let chart = chart();
    let mut args = vec!["template", "argo", chart.as_str()];
    args.extend_from_slice(values);
    let (ok, manifests, err) = helm_offline(&args);
    assert!(ok, "{err}");
    manifests
}

#[test]
fn with_the_emulators_secrets_given_two_renders_are_identical() {
    let given = [
        "--set=emulator.enabled=true",
        "--set=emulator.admin.existingSecret=sim-admin",
        "--set=emulator.tls.existingSecret=sim-tls",
    ];
    let first = template(&given);
    assert_eq!(first, template(&given), "an Argo CD render is stable");
    assert!(
        first.contains("secretName: sim-tls"),
        "the emulator serves the given certificate"
    );
    assert!(
        first.contains("secret: {secretName: sim-tls, items: [{key: ca.crt, path: ca.crt}]}"),
        "the operator trusts the given CA"
    );
    for own in ["argo-edge-operator-emulator-admin", "argo-edge-operator-emulator-tls"] {
        assert!(!first.contains(&format!("name: {own}\n")), "the chart makes no {own}");
    }
    let generated = ["--set=emulator.enabled=true"];
    assert_ne!(
        template(&generated),
        template(&generated),
        "without them the chart generates a token and a CA (kept by helm install, not by helm template)"
    );
    assert_eq!(
        template(&[API_URL]),
        template(&[API_URL]),
        "without the emulator nothing is generated"
    );
}
