//! The local control plane is a real Kubernetes: version, CRD establishment, structural
//! schema validation and namespace deletion.

use std::time::Duration;

use crate::support::cluster::{TestNamespace, cluster, pinned_version};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::DeleteParams;

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.smoke.edgeplatform.io}
spec:
  group: smoke.edgeplatform.io
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
"#;

#[tokio::test]
async fn apiserver_is_ready_and_reports_the_pinned_version() {
    let cluster = cluster();
    let (ok, readyz, _) = cluster.kubectl(&["get", "--raw", "/readyz"], None);
    assert!(ok);
    assert_eq!(readyz.trim(), "ok");
    let client = cluster.client().await;
    let version = client.apiserver_version().await.expect("version");
    assert_eq!(version.git_version, pinned_version());
}

#[tokio::test]
async fn crd_is_established_and_its_schema_enforced() {
    let cluster = cluster();
    cluster.apply(WIDGET_CRD);
    let (ok, _, stderr) = cluster.kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "crd/widgets.smoke.edgeplatform.io",
            "--timeout=60s",
        ],
        None,
    );
    assert!(ok, "{stderr}");
    let namespace = TestNamespace::create("smoke");
    let widget = |size: i32| {
        format!(
            "apiVersion: smoke.edgeplatform.io/v1\nkind: Widget\nmetadata: {{name: w, namespace: {}}}\nspec: {{size: {size}}}\n",
            namespace.name
        )
    };
    let (ok, _, stderr) = cluster.kubectl(&["apply", "-f", "-"], Some(&widget(0)));
    assert!(!ok, "a schema violation must be rejected");
    assert!(stderr.contains("spec.size"), "the message names the field: {stderr}");
    cluster.apply(widget(3));
}

#[tokio::test]
async fn namespace_deletion_completes() {
    let cluster = cluster();
    let namespace = TestNamespace::create("gone");
    let (ok, _, stderr) = cluster.kubectl(
        &[
            "create",
            "configmap",
            "payload",
            "-n",
            &namespace.name,
            "--from-literal=a=b",
        ],
        None,
    );
    assert!(ok, "{stderr}");
    let namespaces: Api<Namespace> = Api::all(cluster.client().await);
    namespaces
        .delete(&namespace.name, &DeleteParams::default())
        .await
        .expect("delete accepted");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while namespaces.get_opt(&namespace.name).await.expect("get").is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "namespace {} was not deleted",
            namespace.name
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
