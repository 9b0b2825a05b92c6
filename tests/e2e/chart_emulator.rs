//! The chart with the emulator: its admin API behind a token the chart keeps, its state
//! on a claim, and the operator trusting its CA or the bundle and proxy given.

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::helm::{CRDS_APPLIED_APART, chart, helm};

pub(crate) const API_URL: &str = "--set=platform.apiUrl=https://api.example.net";
use crate::chart::objects_of_kind;

/// The chart rendered as release `sim` with the emulator and `extra` values.
fn render_with_emulator(extra: &[&str]) -> String {
    let chart = chart();
    let mut args = vec!["template", "sim", &chart, "--set=emulator.enabled=true"];
    args.extend(extra);
    let (ok, manifests, err) = helm(&args);
    assert!(ok, "{extra:?}: {err}");
    manifests
}

fn emulator_deployment(manifests: &str) -> serde_yaml::Value {
    objects_of_kind(manifests, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "sim-edge-operator-emulator")
        .expect("the emulator Deployment")
}

fn emulator_secret_token(namespace: &str, name: &str) -> String {
    let (ok, token, err) = cluster().kubectl(
        &["get", "secret", name, "-n", namespace, "-o", "jsonpath={.data.token}"],
        None,
    );
    assert!(ok, "{err}");
    token
}

#[test]
fn the_emulator_admin_api_needs_a_token_the_chart_keeps_and_only_release_pods_get_through() {
    let namespace = TestNamespace::create("chart-sim");

    let manifests = render_with_emulator(&[]);
    let secrets = objects_of_kind(&manifests, "Secret");
    let token = secrets
        .iter()
        .find(|s| s["metadata"]["name"] == "sim-edge-operator-emulator-admin")
        .and_then(|s| s["data"]["token"].as_str())
        .expect("a generated admin token");
    assert!(
        token.len() >= 40,
        "a long random token: {} base64 characters",
        token.len()
    );
    let policies = objects_of_kind(&manifests, "NetworkPolicy");
    let [policy] = policies.as_slice() else {
        panic!("one NetworkPolicy, the emulator's: {policies:?}");
    };
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "edge-sim"
    );
    let ingress = &policy["spec"]["ingress"];
    assert_eq!(ingress.as_sequence().map(Vec::len), Some(1));
    assert_eq!(
        ingress[0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/instance"], "sim",
        "the release's Pods"
    );
    assert_eq!(
        ingress[0]["from"].as_sequence().map(Vec::len),
        Some(1),
        "and no one else"
    );
    let emulator = emulator_deployment(&manifests);
    let container = &emulator["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(
        args.contains(&"--admin-token-file=/etc/edge-sim-admin/token"),
        "{args:?}"
    );
    assert!(
        container["readinessProbe"]["tcpSocket"].is_mapping(),
        "readiness needs no admin request"
    );
    assert_eq!(
        emulator["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "sim-edge-operator-emulator-admin"
    );

    let mine = render_with_emulator(&[
        "--set=emulator.admin.existingSecret=my-token",
        "--set=emulator.networkPolicy.enabled=false",
    ]);
    assert!(
        !objects_of_kind(&mine, "Secret")
            .iter()
            .any(|s| s["metadata"]["name"] == "sim-edge-operator-emulator-admin"),
        "no generated token beside the user's"
    );
    assert!(objects_of_kind(&mine, "NetworkPolicy").is_empty());
    assert_eq!(
        emulator_deployment(&mine)["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "my-token"
    );

    // On the apiserver: an upgrade keeps the installed token.
    let install = |verb: &str| {
        let chart = chart();
        let (ok, _, err) = helm(&[
            verb,
            "sim",
            &chart,
            "--namespace",
            &namespace.name,
            "--set=emulator.enabled=true",
            CRDS_APPLIED_APART,
        ]);
        assert!(ok, "{verb}: {err}");
    };
    install("install");
    let installed = emulator_secret_token(&namespace.name, "sim-edge-operator-emulator-admin");
    let ca_of = || {
        let (ok, ca, err) = cluster().kubectl(
            &[
                "get",
                "secret",
                "sim-edge-operator-emulator-tls",
                "-n",
                &namespace.name,
                "-o",
                "jsonpath={.data.ca\\.crt}",
            ],
            None,
        );
        assert!(ok && !ca.is_empty(), "{err}");
        ca
    };
    let installed_ca = ca_of();
    install("upgrade");
    assert_eq!(
        emulator_secret_token(&namespace.name, "sim-edge-operator-emulator-admin"),
        installed,
        "the token survives an upgrade"
    );
    assert_eq!(
        ca_of(),
        installed_ca,
        "the emulator's CA, which the operator trusts, survives an upgrade"
    );
    let (ok, _, err) = helm(&["uninstall", "sim", "--namespace", &namespace.name, "--wait=false"]);
    assert!(ok, "{err}");
}

/// The operator's container of the rendered `manifests`.
fn operator_container(manifests: &str, release: &str) -> serde_yaml::Value {
    objects_of_kind(manifests, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == format!("{release}-edge-operator"))
        .map(|d| d["spec"]["template"]["spec"]["containers"][0].clone())
        .expect("the operator Deployment")
}

fn args_of(container: &serde_yaml::Value) -> Vec<String> {
    container["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_emulator_keeps_its_state_on_a_claim_only_when_asked() {
    let plain = render_with_emulator(&[]);
    assert!(objects_of_kind(&plain, "PersistentVolumeClaim").is_empty());
    let deployment = emulator_deployment(&plain);
    assert!(
        !args_of(&deployment["spec"]["template"]["spec"]["containers"][0])
            .iter()
            .any(|a| a.starts_with("--state-file"))
    );

    let kept = render_with_emulator(&[
        "--set=emulator.persistence.enabled=true",
        "--set=emulator.persistence.storageClassName=fast",
    ]);
    let claims = objects_of_kind(&kept, "PersistentVolumeClaim");
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0]["metadata"]["name"], "sim-edge-operator-emulator-state");
    assert_eq!(claims[0]["spec"]["storageClassName"], "fast");
    assert_eq!(claims[0]["spec"]["resources"]["requests"]["storage"], "16Mi");
    let deployment = emulator_deployment(&kept);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        deployment["spec"]["strategy"]["type"], "Recreate",
        "one writer of the volume at a time"
    );
    assert_eq!(
        pod["securityContext"]["fsGroup"], 65532,
        "the non-root emulator can write the volume"
    );
    let container = &pod["containers"][0];
    assert!(args_of(container).contains(&"--state-file=/var/lib/edge-sim/state.json".to_string()));
    let mounted = container["volumeMounts"]
        .as_sequence()
        .expect("mounts")
        .iter()
        .any(|m| m["name"] == "state" && m["mountPath"] == "/var/lib/edge-sim");
    assert!(mounted, "{container:?}");
    let (refused, _, err) = helm(&[
        "template",
        "sim",
        &chart(),
        "--set=emulator.enabled=true",
        "--set=emulator.persistence.size=lots",
    ]);
    assert!(!refused && err.contains("size"), "{err}");
}

#[test]
fn the_operator_trusts_the_emulators_ca_or_the_bundle_given_and_takes_the_proxy_given() {
    let render = |extra: &[&str]| {
        let chart = chart();
        let mut args = vec!["template", "tls", &chart, "--namespace", "team"];
        args.extend(extra);
        let (ok, manifests, err) = helm(&args);
        assert!(ok, "{extra:?}: {err}");
        manifests
    };
    let ca_file = "--ca-file=/etc/edge-operator/ca/ca.crt".to_string();

    let emulated = render(&["--set=emulator.enabled=true"]);
    let args = args_of(&operator_container(&emulated, "tls"));
    assert!(
        args.contains(&"--api-url=https://tls-edge-operator-emulator.team.svc:8080".to_string()),
        "{args:?}"
    );
    assert!(args.contains(&ca_file), "{args:?}");
    assert!(!args.iter().any(|a| a == "--allow-http-in-cluster"), "{args:?}");
    let emulator = objects_of_kind(&emulated, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "tls-edge-operator-emulator")
        .expect("the emulator");
    let emulator_args = args_of(&emulator["spec"]["template"]["spec"]["containers"][0]);
    assert!(
        emulator_args.contains(&"--tls-cert=/etc/edge-sim-tls/tls.crt".to_string()),
        "{emulator_args:?}"
    );
    let tls = objects_of_kind(&emulated, "Secret")
        .into_iter()
        .find(|s| s["metadata"]["name"] == "tls-edge-operator-emulator-tls")
        .expect("the emulator's TLS Secret");
    for key in ["ca.crt", "tls.crt", "tls.key"] {
        assert!(tls["data"][key].as_str().is_some_and(|v| !v.is_empty()), "{key}");
    }

    let plain = render(&["--set=emulator.enabled=true", "--set=emulator.tls.enabled=false"]);
    let args = args_of(&operator_container(&plain, "tls"));
    assert!(
        args.iter().any(|a| a == "--allow-http-in-cluster") && !args.contains(&ca_file),
        "{args:?}"
    );
    assert!(args.iter().any(|a| a.starts_with("--api-url=http://$(")), "{args:?}");

    let bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
    let bundled = render(&[
        API_URL,
        &format!("--set=platform.tls.caBundle={bundle}"),
        "--set=platform.tls.caBundleOnly=true",
        "--set=platform.proxy=none",
    ]);
    let container = operator_container(&bundled, "tls");
    let args = args_of(&container);
    for expected in [ca_file.as_str(), "--ca-file-only"] {
        assert!(args.iter().any(|a| a == expected), "{expected}: {args:?}");
    }
    assert_eq!(proxy_env(&container), serde_yaml::Value::from("none"));
    let config_map = objects_of_kind(&bundled, "ConfigMap")
        .into_iter()
        .find(|c| c["metadata"]["name"] == "tls-edge-operator-ca")
        .expect("the CA bundle's ConfigMap");
    assert!(
        config_map["data"]["ca.crt"]
            .as_str()
            .is_some_and(|pem| pem.contains("MIIB"))
    );

    let from_secret = render(&[
        API_URL,
        "--set=platform.tls.existingSecret=corporate-ca",
        "--set=platform.tls.key=bundle.pem",
        "--set=platform.proxy=http://proxy.corp:3128",
    ]);
    let deployment = objects_of_kind(&from_secret, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "tls-edge-operator")
        .expect("the operator");
    let volume = deployment["spec"]["template"]["spec"]["volumes"]
        .as_sequence()
        .and_then(|volumes| volumes.iter().find(|v| v["name"] == "trusted-ca").cloned())
        .expect("the trusted-ca volume");
    assert_eq!(volume["secret"]["secretName"], "corporate-ca");
    assert_eq!(volume["secret"]["items"][0]["key"], "bundle.pem");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert!(
        !args_of(container).iter().any(|a| a.contains("proxy")),
        "never on the command line"
    );
    assert_eq!(proxy_env(container), serde_yaml::Value::from("http://proxy.corp:3128"));

    let with_password = render(&[API_URL, "--set=platform.proxySecret.name=corporate-proxy"]);
    let container = operator_container(&with_password, "tls");
    assert_eq!(
        proxy_env(&container)["secretKeyRef"],
        serde_yaml::from_str::<serde_yaml::Value>("{name: corporate-proxy, key: proxy}").expect("YAML")
    );

    let chart = chart();
    for (value, refusal) in [
        ("--set=platform.proxy=proxy.corp", "a proxy that is no URL is refused"),
        (
            "--set=platform.proxy=http://user:secret@proxy.corp:3128",
            "a password goes in platform.proxySecret, never in values",
        ),
    ] {
        let (accepted, _, err) = helm(&["template", "tls", &chart, API_URL, value]);
        assert!(!accepted && err.contains("proxy"), "{refusal}: {err}");
    }
}

/// The value of the operator container's EDGE_PROXY: its `value`, or its `valueFrom`.
fn proxy_env(container: &serde_yaml::Value) -> serde_yaml::Value {
    let env = container["env"].as_sequence().cloned().unwrap_or_default();
    let proxy = env
        .iter()
        .find(|e| e["name"] == "EDGE_PROXY")
        .expect("EDGE_PROXY is set");
    if proxy["value"].is_null() {
        proxy["valueFrom"].clone()
    } else {
        proxy["value"].clone()
    }
}
