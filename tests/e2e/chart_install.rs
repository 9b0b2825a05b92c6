//! The chart installed on the real control plane: every object it makes, the operator
//! working with exactly the RBAC it grants, and its installation check (`helm test`).

use std::time::Duration;

use crate::support::cluster::{TestNamespace, cluster, repo_root};
use crate::support::helm::{CRDS_APPLIED_APART, chart, helm};
use crate::support::manifest::Manifest;
use crate::support::operator::{HasConditions, Operator, eventually, free_port};
use crate::support::sim::{example_fixtures, platform_list, start};
use edge_operator::controller::kinds::access_list::claim_resource::AccessListClaim;
use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use kube::Api;

pub(crate) const API_URL: &str = "--set=platform.apiUrl=https://api.example.net";

/// Another ServiceAccount granted AccessListClaims by RBAC may not write one (the
/// chart's admission policy); a claim a cluster administrator deletes is re-created by
/// the operator with its restore point.
async fn claims_are_written_by_operators_only_and_one_deleted_comes_back(api: &Api<AccessListConfig>, namespace: &str) {
    let name = api
        .get("rbac")
        .await
        .ok()
        .and_then(|o| o.status)
        .and_then(|s| s.claim)
        .expect("status names the claim");
    let intruder = format!("system:serviceaccount:{namespace}:intruder");
    let grant = format!("{namespace}-claims-intruder");
    cluster().apply(format!(
        "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {grant}}}
rules: [{{apiGroups: [edgeplatform.io], resources: [accesslistclaims], verbs: [get, list, create, patch, update, delete]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {grant}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {grant}}}
subjects: [{{kind: ServiceAccount, name: intruder, namespace: {namespace}}}]
"
    ));
    let as_intruder = format!("--as={intruder}");
    for attempt in [
        vec![
            "label",
            "accesslistclaim",
            name.as_str(),
            "taken=yes",
            as_intruder.as_str(),
        ],
        vec!["delete", "accesslistclaim", name.as_str(), as_intruder.as_str()],
    ] {
        let (ok, _, err) = cluster().kubectl(&attempt, None);
        assert!(
            !ok && err.contains("written by the edge-operator only"),
            "{attempt:?}: {err}"
        );
    }
    let claims: Api<AccessListClaim> = Api::all(cluster().client().await);
    let before = claims.get(&name).await.expect("the claim");
    let (ok, _, err) = cluster().kubectl(&["delete", "accesslistclaim", &name], None);
    assert!(ok, "an administrator may delete a claim: {err}");
    let again = eventually("the claim re-created", Duration::from_secs(30), || async {
        claims
            .get_opt(&name)
            .await
            .ok()
            .flatten()
            .filter(|claim| claim.metadata.uid != before.metadata.uid)
    })
    .await;
    assert_eq!(again.spec, before.spec, "with what it held");
    assert!(again.spec.restore_point.is_some());
    for kind in ["clusterrolebinding", "clusterrole"] {
        let (ok, _, err) = cluster().kubectl(&["delete", kind, &grant], None);
        assert!(ok, "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_creates_every_object_and_its_rbac_is_enough_and_no_more() {
    let namespace = TestNamespace::create("chart");
    let release = format!("r{}", &namespace.name[namespace.name.len() - 6..]);
    let secret_access = format!("--set=secretAccess.namespaces={{{}}}", namespace.name);
    let default_key = format!("--set=credentials.defaultKeyNamespaces={{{}}}", namespace.name);
    let (ok, _, err) = helm(&[
        "install",
        &release,
        &chart(),
        "--namespace",
        &namespace.name,
        API_URL,
        "--set=replicas=2",
        "--set=credentials.create=true",
        "--set=credentials.accessKey=demo-access-key",
        "--set=podDisruptionBudget.enabled=true",
        "--set=networkPolicy.enabled=true",
        &secret_access,
        &default_key,
        CRDS_APPLIED_APART,
    ]);
    assert!(ok, "{err}");
    let fullname = format!("{release}-edge-operator");
    for (kind, name, namespaced) in [
        ("deployment", fullname.clone(), true),
        ("serviceaccount", fullname.clone(), true),
        ("secret", format!("{fullname}-credentials"), true),
        ("service", format!("{fullname}-metrics"), true),
        ("poddisruptionbudget", fullname.clone(), true),
        ("networkpolicy", fullname.clone(), true),
        ("role", format!("{fullname}-leader-election"), true),
        ("role", format!("{fullname}-secrets"), true),
        ("rolebinding", format!("{fullname}-secrets"), true),
        ("rolebinding", format!("{fullname}-leader-election"), true),
        ("clusterrole", fullname.clone(), false),
        ("clusterrolebinding", fullname.clone(), false),
        (
            "validatingadmissionpolicy",
            format!("{fullname}-secret-finalizers-only"),
            false,
        ),
        (
            "validatingadmissionpolicybinding",
            format!("{fullname}-secret-finalizers-only"),
            false,
        ),
        (
            "validatingadmissionpolicy",
            format!("{fullname}-claims-by-operators-only"),
            false,
        ),
        (
            "validatingadmissionpolicybinding",
            format!("{fullname}-claims-by-operators-only"),
            false,
        ),
        ("clusterrole", format!("{fullname}-rollout-approver"), false),
    ] {
        let mut args = vec!["get", kind, name.as_str()];
        if namespaced {
            args.extend(["-n", namespace.name.as_str()]);
        }
        let (ok, _, err) = cluster().kubectl(&args, None);
        assert!(ok, "{kind}/{name}: {err}");
    }
    let (_, args, _) = cluster().kubectl(
        &[
            "get",
            "deployment",
            &fullname,
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].args}",
        ],
        None,
    );
    assert!(
        args.contains("--leader-elect"),
        "replicas > 1 turns leader election on: {args}"
    );
    let (_, security, _) = cluster().kubectl(
        &[
            "get",
            "deployment",
            &fullname,
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].securityContext}",
        ],
        None,
    );
    assert!(
        security.contains("\"readOnlyRootFilesystem\":true") && security.contains("ALL"),
        "{security}"
    );

    // The operator, authenticated as the chart's ServiceAccount, does its job.
    let service_account = format!("system:serviceaccount:{}:{fullname}", namespace.name);
    let kubeconfig = cluster().kubeconfig_as(&service_account);
    let sim = start(example_fixtures()).await;
    let _operator = Operator::start_with_kubeconfig(
        &namespace.name,
        &sim.base_url(),
        &[
            "--leader-elect",
            "--lease-namespace",
            &namespace.name,
            "--lease-name",
            &fullname,
        ],
        kubeconfig.path(),
    );
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "rbac",
        serde_json::json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "deletionPolicy": "Restore"}),
    ));
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    eventually("Ready as the ServiceAccount", Duration::from_secs(45), || async {
        let object = api.get("rbac").await.ok()?;
        object
            .condition("Ready")
            .is_some_and(|c| c.reason == "InSync")
            .then_some(())
    })
    .await;
    claims_are_written_by_operators_only_and_one_deleted_comes_back(&api, &namespace.name).await;
    let (ok, _, err) = cluster().kubectl(
        &[
            "delete",
            "accesslistconfig",
            "rbac",
            "-n",
            &namespace.name,
            "--timeout=45s",
        ],
        None,
    );
    assert!(ok, "the finalizer is removed with the granted verbs: {err}");
    assert_eq!(
        platform_list(&sim, 9101),
        Some((false, 2)),
        "restored what the re-created claim held"
    );

    let as_operator = format!("--as={service_account}");
    let can_i = |verb: &str, resource: &str, scope: &str| cluster().can_i(&service_account, verb, resource, scope);
    let served = namespace.name.as_str();
    let own_lease = format!("leases.coordination.k8s.io/{fullname}");
    for (verb, resource, scope, granted) in [
        ("update", own_lease.as_str(), served, true),
        ("get", own_lease.as_str(), served, true),
        ("create", "leases.coordination.k8s.io", served, false),
        ("update", "leases.coordination.k8s.io/another-release", served, false),
        ("get", "leases.coordination.k8s.io/another-release", served, false),
        ("get", "secrets", served, true),
        ("watch", "secrets", served, true),
        ("patch", "secrets", served, true),
        ("get", "secrets", "default", false),
        ("get", "secrets", "kube-system", false),
        ("list", "secrets", "*", false),
        ("patch", "secrets", "default", false),
        ("delete", "accesslistconfigs.edgeplatform.io", served, false),
        ("update", "secrets", served, false),
        ("create", "deployments.apps", served, false),
        ("delete", "secrets", served, false),
    ] {
        assert_eq!(
            can_i(verb, resource, scope),
            granted,
            "{verb} {resource} in {scope}: granted should be {granted}"
        );
    }
    let (refused, _, err) = cluster().kubectl(
        &[
            "delete",
            "secret",
            &format!("{fullname}-credentials"),
            "-n",
            &namespace.name,
            &as_operator,
        ],
        None,
    );
    assert!(!refused && err.contains("forbidden"), "{err}");

    // RBAC grants patch on Secrets; the admission policy admits only finalizer changes.
    let secret = format!("{fullname}-credentials");
    let patch_secret_with = |patch: &str, extra: &[&str]| {
        let mut args = vec![
            "patch",
            "secret",
            &secret,
            "-n",
            &namespace.name,
            "--type=merge",
            "-p",
            patch,
        ];
        args.extend(extra);
        cluster().kubectl(&args, None)
    };
    let patch_secret = |patch: &str, dry_run: &str| patch_secret_with(patch, &[&as_operator, dry_run]);
    let stolen = r#"{"data":{"accessKey":"c3RvbGVu"}}"#;
    // The policy is served a moment after its creation: wait for it without writing.
    eventually("the policy to refuse the operator", Duration::from_secs(30), || async {
        let (ok, _, _) = patch_secret(stolen, "--dry-run=server");
        (!ok).then_some(())
    })
    .await;
    for patch in [
        stolen,
        r#"{"stringData":{"accessKey":"stolen"}}"#,
        r#"{"metadata":{"labels":{"stolen":"yes"}}}"#,
        r#"{"metadata":{"annotations":{"stolen":"yes"}}}"#,
    ] {
        let (ok, _, err) = patch_secret(patch, "--dry-run=none");
        let refusal = "may change only its own finalizer (edgeplatform.io/credentials-in-use)";
        assert!(!ok && err.contains(refusal), "{patch}: {err}");
    }
    let (ok, _, err) = patch_secret(
        r#"{"metadata":{"finalizers":["edgeplatform.io/credentials-in-use"]}}"#,
        "--dry-run=none",
    );
    assert!(ok, "its own finalizer is admitted: {err}");
    let (ok, _, err) = patch_secret(r#"{"metadata":{"finalizers":null}}"#, "--dry-run=none");
    assert!(ok, "and its removal: {err}");
    let (ok, _, err) = patch_secret(
        r#"{"metadata":{"finalizers":["example.com/another-controller"]}}"#,
        "--dry-run=none",
    );
    assert!(
        !ok && err.contains("its own finalizer"),
        "another finalizer is refused: {err}"
    );
    let admin_patch = |patch: &str| {
        let (ok, _, err) = patch_secret_with(patch, &[]);
        assert!(ok, "{err}");
    };
    admin_patch(r#"{"metadata":{"finalizers":["example.com/another-controller"]}}"#);
    let (ok, _, err) = patch_secret(r#"{"metadata":{"finalizers":null}}"#, "--dry-run=none");
    assert!(
        !ok && err.contains("its own finalizer"),
        "another controller's finalizer stays: {err}"
    );
    admin_patch(r#"{"metadata":{"finalizers":null}}"#);
    let (_, data, _) = cluster().kubectl(
        &[
            "get",
            "secret",
            &secret,
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.data.accessKey}",
        ],
        None,
    );
    assert_eq!(data, "ZGVtby1hY2Nlc3Mta2V5", "the key is unchanged");
    let (_, _, _) = helm(&["uninstall", &release, "--namespace", &namespace.name]);
}

/// Runs `edge-operator check` (the chart's `helm test`) against the test cluster.
fn installation_check(health_url: &str, namespace: &str, ready_within: &str) -> (bool, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_edge-operator"))
        .args([
            "check",
            "--health-url",
            health_url,
            "--namespace",
            namespace,
            "--ready-within",
            ready_within,
        ])
        .env("KUBECONFIG", &cluster().kubeconfig)
        .output()
        .expect("edge-operator check runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installation_check_passes_on_a_ready_operator_and_says_what_is_wrong_otherwise() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("check");
    let addr = format!("127.0.0.1:{}", free_port());
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &["--metrics-addr", &addr]);
    // The examples exist already: the dry runs must not collide with them.
    for file in [
        "access-list-config.yaml",
        "pull-zone-certificate.yaml",
        "container-app-watch.yaml",
    ] {
        let path = repo_root().join("examples").join(file).display().to_string();
        let (ok, _, err) = cluster().kubectl(&["apply", "-n", &namespace.name, "-f", &path], None);
        assert!(ok, "{file}: {err}");
    }
    let health_url = format!("http://{addr}");
    let (ok, out, err) = tokio::task::spawn_blocking(move || installation_check(&health_url, &namespace.name, "60s"))
        .await
        .expect("check");
    assert!(ok, "{out}{err}");
    for passed in [
        "the operator is ready",
        "AccessListConfig edge-operator-check-",
        "PullZoneCertificate edge-operator-check-",
        "ContainerAppWatch edge-operator-check-",
        "naming both a configurationId and a listName is refused",
    ] {
        assert!(out.contains(passed), "{passed:?} in:\n{out}");
    }

    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let (ok, _, err) = installation_check(&nowhere, "default", "1s");
    assert!(!ok && err.contains("did not answer ready"), "{err}");
}
