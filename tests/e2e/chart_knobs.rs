//! The chart's knobs that platform teams expect (names, labels, security contexts,
//! probes, volumes, scheduling of every Pod, Service and ServiceMonitor settings),
//! rendered with `helm template`.

use serde::Deserialize;

use crate::chart::API_URL;
use crate::support::helm::{chart, helm};

/// Every object the chart renders with `values` (a YAML document) and the emulator on.
fn render(values: &str) -> Vec<serde_yaml::Value> {
    let file = tempfile::NamedTempFile::new().expect("values file");
    std::fs::write(file.path(), values).expect("values written");
    let chart = chart();
    let path = file.path().display().to_string();
    let (ok, manifests, err) = helm(&[
        "template",
        "knobs",
        &chart,
        API_URL,
        "--set=emulator.enabled=true",
        "--set=metrics.serviceMonitor.enabled=true",
        "-f",
        &path,
    ]);
    assert!(ok, "{err}");
    serde_yaml::Deserializer::from_str(&manifests)
        .filter_map(|document| serde_yaml::Value::deserialize(document).ok())
        .filter(|object| !object.is_null())
        .collect()
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
nodeSelector: {disk: ssd}
tolerations: [{key: dedicated, operator: Exists}]
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: In, values: [ssd]}]}]}}}
metrics:
  service: {annotations: {prometheus.io/scrape: "false"}}
  serviceMonitor: {scrapeTimeout: 10s, relabelings: [{action: labeldrop, regex: pod}], metricRelabelings: [{action: drop, sourceLabels: [__name__], regex: process_.*}]}
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
    let service = objects
        .iter()
        .find(|o| o["kind"] == "Service" && o["metadata"]["name"] == "edge-ops-metrics")
        .expect("the metrics Service");
    assert_eq!(service["metadata"]["annotations"]["prometheus.io/scrape"], "false");
    let monitor = objects
        .iter()
        .find(|o| o["kind"] == "ServiceMonitor")
        .expect("a ServiceMonitor");
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
    }
}

/// The chart rendered as `helm template` renders it for Argo CD: no cluster to look up.
fn template(values: &[&str]) -> String {
    let chart = chart();
    let mut args = vec!["template", "argo", chart.as_str()];
    args.extend_from_slice(values);
    let (ok, manifests, err) = helm(&args);
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
