//! The previous release with live objects, upgraded to the working tree.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::release::Release;
use crate::support::cluster::{cluster, pinned, repo_root};
use crate::support::gitops::{get_json, judge};
use crate::support::helm::{chart, helm};
use crate::support::operator::eventually;
use crate::support::recipe;

const WAIT: Duration = Duration::from_secs(90);
/// The chart's default `leaderElection.leaseDuration`.
const LEASE: Duration = Duration::from_secs(15);
const KINDS: &str =
    "accesslistconfigs.edgeplatform.io,pullzonecertificates.edgeplatform.io,containerappwatches.edgeplatform.io";
/// The cluster-scoped records of who writes which access-list configuration, which the
/// previous release already writes.
const CLAIMS: &str = "accesslistclaims.edgeplatform.io";
/// Configuration 9101 (the AccessListConfig example's) as the example fixtures hold it:
/// (enabled, action).
const FIXTURE_LIST: (bool, i64) = (false, 2);
/// The previous release's examples, one object of each kind.
const EXAMPLES: [(&str, &str); 3] = [
    ("access-list-config.yaml", "accesslistconfig/block-known-bad-actors"),
    ("pull-zone-certificate.yaml", "pullzonecertificate/shop-example-com"),
    ("container-app-watch.yaml", "containerappwatch/shop-frontend"),
];

/// The previous release's chart, CRDs and examples, from git history, in a directory of their
/// own; removed when dropped.
struct PreviousSources {
    dir: PathBuf,
}

impl PreviousSources {
    fn extract(commit: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("edge-operator-previous-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let status = Command::new("bash")
            .arg("-c")
            .arg(r#"set -o pipefail; git -C "$1" archive "$2" charts/edge-operator crds examples | tar -x -C "$3""#)
            .args([
                "extract",
                &repo_root().display().to_string(),
                commit,
                &dir.display().to_string(),
            ])
            .status()
            .expect("git and tar run");
        assert!(
            status.success(),
            "the previous release {commit} is not in this clone's history (clone without --depth)"
        );
        Self { dir }
    }

    fn chart(&self) -> String {
        self.dir.join("charts/edge-operator").display().to_string()
    }

    /// The previous chart's appVersion: the tag of its default image.
    fn version(&self) -> String {
        let chart = std::fs::read_to_string(self.dir.join("charts/edge-operator/Chart.yaml")).expect("Chart.yaml");
        let chart: serde_yaml::Value = serde_yaml::from_str(&chart).expect("YAML");
        chart["appVersion"].as_str().expect("an appVersion").to_string()
    }

    fn crds(&self) -> String {
        self.dir.join("crds").display().to_string()
    }

    fn example(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join("examples").join(file)).expect("the previous release's example")
    }
}

impl Drop for PreviousSources {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn kubectl(args: &[&str], stdin: Option<&str>) -> String {
    let (ok, out, err) = cluster().kubectl(args, stdin);
    assert!(ok, "kubectl {args:?}: {err}");
    out
}

/// Replaces the current CRDs with none, so that the previous chart's `helm install`
/// creates its own, as it did for its users. Refuses when objects of them exist, claims
/// included.
fn remove_current_crds() {
    let objects = kubectl(
        &["get", &format!("{KINDS},{CLAIMS}"), "--all-namespaces", "-o", "name"],
        None,
    );
    assert!(
        objects.trim().is_empty(),
        "the upgrade test replaces the edgeplatform.io CRDs and needs a cluster without objects of them: {objects}"
    );
    kubectl(
        &[
            "delete",
            "-f",
            &repo_root().join("crds").display().to_string(),
            "--ignore-not-found",
            "--wait",
        ],
        None,
    );
}

/// The working tree's emulator, rendered by its chart for release `name` (so the
/// emulator's NetworkPolicy admits the release's Pods) and applied with kubectl: the
/// previous chart has none, and it outlives the upgrade. Returns its Service's URL.
fn deploy_emulator(name: &str, namespace: &str, fixtures: &Path) -> String {
    let chart = chart();
    let (ok, manifest, err) = helm(&[
        "template",
        name,
        &chart,
        "--namespace",
        namespace,
        "--show-only=templates/emulator.yaml",
        "--set=emulator.enabled=true",
        "--set=emulator.image.pullPolicy=Never",
        // The stand-in platform over plain http in the cluster (platform.allowHttpInCluster):
        // what the test proves is the upgrade; the node suite proves https with a private CA.
        "--set=emulator.tls.enabled=false",
        &format!("--set-file=emulator.fixtures={}", fixtures.display()),
    ]);
    assert!(ok, "helm template: {err}");
    kubectl(&["apply", "-n", namespace, "-f", "-"], Some(&manifest));
    let emulator = format!("{name}-edge-operator-emulator");
    let deployment = format!("deployment/{emulator}");
    let (ok, _, err) = cluster().kubectl(
        &["rollout", "status", "-n", namespace, &deployment, "--timeout=120s"],
        None,
    );
    if !ok {
        let (_, log, _) = cluster().kubectl(&["logs", "-n", namespace, &deployment], None);
        panic!(
            "the emulator did not start: {err}\nlog:\n{log}\n{}",
            cluster().why_not_ready(namespace)
        );
    }
    let address = kubectl(
        &[
            "get",
            "service",
            "-n",
            namespace,
            &emulator,
            "-o",
            "jsonpath={.spec.clusterIP}",
        ],
        None,
    );
    format!("http://{}:8080", address.trim())
}

/// The previous release's values: the emulator as the platform over cluster-internal
/// http, a key Secret the chart creates, one watched namespace whose objects use it.
fn previous_values(api_url: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("--set=platform.apiUrl={api_url}"),
        "--set=platform.allowHttpInCluster=true".into(),
        "--set=credentials.create=true".into(),
        "--set=credentials.accessKey=demo-access-key".into(),
        format!("--set=credentials.defaultKeyNamespaces={{{namespace}}}"),
        format!("--set=watchNamespace={namespace}"),
        "--set=image.pullPolicy=Never".into(),
    ]
}

/// The platform writes the emulator journaled: every request but a GET or an event
/// search (a query sent by POST).
async fn platform_writes(release: &Release) -> Vec<String> {
    release
        .journal()
        .await
        .iter()
        .filter(|entry| entry["method"] != "GET" && !entry["path"].as_str().is_some_and(|p| p.ends_with("/search")))
        .map(|entry| {
            let text = |field: &str| entry[field].as_str().unwrap_or_default().to_string();
            format!("{} {}", text("method"), text("path"))
        })
        .collect()
}

/// The access list 9101 of Shield Zone 1001 as the emulator holds it: (enabled, action).
async fn platform_list(release: &Release) -> (bool, i64) {
    let state: Value =
        serde_json::from_str(&release.emulator_admin_get("/_sim/state").await).expect("the state is JSON");
    let lists = state["shieldZones"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|zone| zone["id"] == 1001)
        .flat_map(|zone| zone["accessLists"].as_array().cloned().unwrap_or_default());
    let list = lists
        .into_iter()
        .find(|list| list["configurationId"] == 9101)
        .expect("configuration 9101");
    (
        list["isEnabled"].as_bool().expect("isEnabled"),
        list["action"].as_i64().expect("action"),
    )
}

/// Whether every object is healthy by kstatus, Argo CD and `kubectl wait`, with a
/// Ready condition of its current generation.
fn all_healthy(namespace: &str) -> bool {
    EXAMPLES.iter().all(|(_, resource)| {
        let verdict = judge(namespace, resource, "1s");
        let object = get_json(namespace, resource);
        let generation = &object["metadata"]["generation"];
        let ready_now = object["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True" && &c["observedGeneration"] == generation);
        verdict.kstatus == "Current" && verdict.argocd == "Healthy" && verdict.kubectl_wait && ready_now
    })
}

/// The AccessListConfig's `status.restorePoint` (enabled, action), the values the
/// previous release read before its first write and mirrored from its claim, once
/// unchanged for 3 s.
async fn settled_restore_point(namespace: &str) -> Option<(bool, i64)> {
    let read = || enabled_and_action(&get_json(namespace, EXAMPLES[0].1)["status"]["restorePoint"]);
    let mut last = read();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let now = read();
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("the previous release kept changing the restore point");
}

/// The objects and the operator's log, for a failure's message.
fn diagnosis(namespace: &str) -> String {
    let (_, objects, _) = cluster().kubectl(
        &["get", "-n", namespace, &format!("{KINDS},{CLAIMS}"), "-o", "yaml"],
        None,
    );
    let (_, log, _) = cluster().kubectl(
        &[
            "logs",
            "-n",
            namespace,
            "-l",
            "app.kubernetes.io/name=edge-operator",
            "--tail=40",
        ],
        None,
    );
    format!("{objects}\noperator log:\n{log}")
}

/// The release folder whose chart the documented upgrade installs: `hack/release.sh`'s
/// (`EDGE_TEST_RELEASE_DIR`, which `make e2e-kind` sets), else one holding the working
/// tree's chart packaged as that script packages it; removed when dropped.
enum ReleaseFolder {
    Given(PathBuf),
    Packaged(tempfile::TempDir),
}

impl ReleaseFolder {
    fn new() -> Self {
        if let Some(dir) = std::env::var_os("EDGE_TEST_RELEASE_DIR") {
            return Self::Given(PathBuf::from(dir));
        }
        let dir = tempfile::Builder::new()
            .prefix("edge-operator-release-")
            .tempdir()
            .expect("a temporary directory");
        let destination = dir.path().display().to_string();
        let (ok, _, err) = helm(&["package", &chart(), "--destination", &destination]);
        assert!(ok, "helm package: {err}");
        Self::Packaged(dir)
    }

    fn path(&self) -> String {
        match self {
            Self::Given(dir) => dir.display().to_string(),
            Self::Packaged(dir) => dir.path().display().to_string(),
        }
    }
}

/// Runs one command of a documented block, in the repository root (where cargo runs the
/// tests: `crds/` there is the new release's), against the test cluster.
fn run_documented(command: &[String]) {
    let args: Vec<&str> = command[1..].iter().map(String::as_str).collect();
    let (ok, _, err) = match command[0].as_str() {
        "helm" => helm(&args),
        "kubectl" => cluster().kubectl(&args, None),
        other => panic!("the documented upgrade runs {other}, which the test does not run: {command:?}"),
    };
    assert!(ok, "{}: {err}", command.join(" "));
}

/// How the new CRDs reach the cluster (docs/operations.md, "Upgrading").
#[derive(Debug, Clone, Copy)]
enum CrdUpgrade {
    /// With the chart (`crds.enabled`, the default): `helm upgrade` alone.
    WithTheChart,
    /// Installed apart (`crds.enabled=false`): the previous release's applied before its
    /// `helm install`, the new ones applied server-side before `helm upgrade`.
    Apart,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_release_upgrades_with_its_objects_converged_its_owners_recorded_and_no_duplicate_platform_write()
{
    assert!(
        std::env::var_os("EDGE_TEST_KUBECONFIG").is_some(),
        "the upgrade test needs a cluster with a node and the images loaded (hack/image/build.sh previous), \
         in EDGE_TEST_KUBECONFIG"
    );
    // One after the other: each replaces the CRDs.
    for crds in [CrdUpgrade::WithTheChart, CrdUpgrade::Apart] {
        println!("== CRDs {crds:?}");
        upgrade_from_the_previous_release(crds).await;
    }
}

/// The image a Pod's container runs, as its status reports it: (image, image ID).
fn running_image(pod: &k8s_openapi::api::core::v1::Pod) -> (String, String) {
    let status = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|statuses| statuses.first())
        .expect("the operator container's status");
    (status.image.clone(), status.image_id.clone())
}

/// The `metadata` of the CRDs of `folder`, as the cluster holds them (each must exist).
fn crd_metadata(folder: &str) -> Vec<Value> {
    let list: Value =
        serde_json::from_str(&kubectl(&["get", "-f", folder, "-o", "json"], None)).expect("the CRDs as JSON");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|crd| crd["metadata"].clone())
        .collect()
}

/// Checks who owns the CRDs of `folder`, every one of which must exist: release `name`,
/// kept on uninstall, when they come with the chart; no release when applied apart.
fn assert_crd_owners(crds: CrdUpgrade, name: &str, folder: &str, when: &str) {
    let metadata = crd_metadata(folder);
    let managed_by_the_release = |metadata: &Value| {
        metadata["annotations"]["meta.helm.sh/release-name"] == name
            && metadata["annotations"]["helm.sh/resource-policy"] == "keep"
    };
    match crds {
        CrdUpgrade::WithTheChart => assert!(
            metadata.iter().all(managed_by_the_release),
            "{when}: the release owns the CRDs, kept on uninstall: {metadata:?}"
        ),
        CrdUpgrade::Apart => assert!(
            !metadata.iter().any(managed_by_the_release),
            "{when}: crds.enabled=false leaves the CRDs to whoever installed them: {metadata:?}"
        ),
    }
}

/// The AccessListClaim whose owner is in `namespace`, if any.
fn claim_of(namespace: &str) -> Option<Value> {
    let claims: Value =
        serde_json::from_str(&kubectl(&["get", CLAIMS, "-o", "json"], None)).expect("the AccessListClaims as JSON");
    claims["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|claim| claim["spec"]["owner"]["namespace"] == namespace)
        .cloned()
}

/// The (enabled, action) of a claim's or a status' `restorePoint`.
fn enabled_and_action(point: &Value) -> Option<(bool, i64)> {
    Some((point["isEnabled"].as_bool()?, point["action"].as_i64()?))
}

async fn upgrade_from_the_previous_release(crds: CrdUpgrade) {
    let commit = pinned("PREVIOUS_RELEASE_COMMIT");
    let previous = PreviousSources::extract(&commit);
    remove_current_crds();
    let (namespace, name) = Release::namespace_and_name("upgrade");
    let ns = namespace.name.clone();
    let api_url = deploy_emulator(&name, &ns, &repo_root().join("examples/edge-sim-fixtures.yaml"));

    // The previous release, as its users installed it: its CRDs with its chart, or
    // applied apart first.
    let values = previous_values(&api_url, &ns);
    let previous_chart = previous.chart();
    let mut args: Vec<&str> = vec!["install", &name, &previous_chart, "--namespace", &ns];
    args.extend(values.iter().map(String::as_str));
    if let CrdUpgrade::Apart = crds {
        kubectl(&["apply", "--server-side", "-f", &previous.crds()], None);
        args.push("--set=crds.enabled=false");
    }
    args.extend(["--wait", "--timeout=120s"]);
    let started = Instant::now();
    let (ok, _, err) = helm(&args);
    assert!(ok, "helm install of the previous release: {err}");
    let release = Release::installed(name, namespace, started.elapsed(), "http");
    for (file, _) in EXAMPLES {
        kubectl(&["apply", "-n", &ns, "-f", "-"], Some(&previous.example(file)));
    }
    for (_, resource) in EXAMPLES {
        let (ok, _, err) = cluster().kubectl(
            &["wait", "-n", &ns, resource, "--for=condition=Ready", "--timeout=90s"],
            None,
        );
        assert!(ok, "the previous release served {resource}: {err}\n{}", diagnosis(&ns));
    }
    assert_eq!(
        platform_list(&release).await,
        (true, 2),
        "the previous release enabled the list, with action Block"
    );
    let old_pods = release.operator_pods().await;
    assert_eq!(old_pods.len(), 1);
    let old_pod = old_pods[0].metadata.name.clone().expect("a Pod name");
    let (old_image, old_image_id) = running_image(&old_pods[0]);
    println!("the previous release runs {old_image} ({old_image_id})");
    assert!(
        old_image.ends_with(&format!(":{}", previous.version())),
        "the previous chart's default image: {old_image}"
    );
    let recorded = settled_restore_point(&ns).await;
    println!("restore point recorded by the previous release: {recorded:?}");
    // The previous release records the owner it decided, and the values it read before
    // its first write, in an AccessListClaim; status mirrors the restore point.
    let claim_before = claim_of(&ns)
        .unwrap_or_else(|| panic!("the previous release's claim of the configuration\n{}", diagnosis(&ns)));
    let object = get_json(&ns, EXAMPLES[0].1);
    assert_eq!(claim_before["spec"]["owner"]["name"], "block-known-bad-actors");
    assert_eq!(claim_before["spec"]["owner"]["uid"], object["metadata"]["uid"]);
    assert_eq!(claim_before["spec"]["configurationId"], 9101);
    assert!(
        claim_before["spec"]["proof"]["readAt"].is_string(),
        "confirmed by its owner's read: {claim_before}"
    );
    let restore_point = FIXTURE_LIST;
    assert_eq!(
        enabled_and_action(&claim_before["spec"]["restorePoint"]),
        Some(restore_point),
        "the claim holds the values before the previous release's first write: {claim_before}"
    );
    assert_eq!(
        recorded,
        Some(restore_point),
        "status mirrors the claim's restore point"
    );
    println!("the previous release's claim: {}", claim_before["spec"]);
    // The previous release installed every CRD this version has, the claims' too.
    let crds_folder = repo_root().join("crds").display().to_string();
    assert_crd_owners(crds, &release.name, &crds_folder, "before the upgrade");
    let writes_before = platform_writes(&release).await;

    // The documented upgrade, as written (the README's block; docs/operations.md's for
    // CRDs installed apart: the new CRDs applied server-side, then the same helm
    // upgrade), while a change arrives, with the chart's default image (its appVersion's
    // tag).
    let folder = ReleaseFolder::new();
    let commands = recipe::upgrade(matches!(crds, CrdUpgrade::Apart), &folder.path(), &release.name, &ns);
    println!("the documented upgrade: {commands:?}");
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = release.sample_rollout(old_pod.clone(), stop.clone());
    let change = tokio::task::spawn_blocking({
        let yaml = previous
            .example(EXAMPLES[0].0)
            .replace("action: Block", "action: Challenge");
        let ns = ns.clone();
        move || kubectl(&["apply", "-n", &ns, "-f", "-"], Some(&yaml))
    });
    let upgrade_started = Instant::now();
    tokio::task::block_in_place(|| commands.iter().for_each(|command| run_documented(command)));
    change.await.expect("the change is applied");
    kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "-f",
            &crds_folder,
            "--timeout=60s",
        ],
        None,
    );
    let (refused, _, err) = cluster().kubectl(
        &[
            "patch",
            "-n",
            &ns,
            EXAMPLES[0].1,
            "--type=merge",
            "-p",
            r#"{"spec":{"shieldZoneId":1002}}"#,
        ],
        None,
    );
    assert!(
        !refused && err.contains("immutable"),
        "the new CRDs' validation rules hold for the objects already there: {err}"
    );
    assert_crd_owners(crds, &release.name, &crds_folder, "after the upgrade");
    // The old and the new operator run side by side for a while (a surge Pod, which
    // waits for the Lease): done when the old one is gone and the new one leads.
    eventually(
        "every object healthy again for its current generation, the old operator gone, a new one leading",
        WAIT,
        || async {
            let healthy = tokio::task::block_in_place(|| all_healthy(&ns));
            let pods = release.operator_pods().await;
            let leader = release.leader().await;
            let replaced = matches!(pods.as_slice(),
                [pod] if pod.metadata.name.as_deref() != Some(old_pod.as_str()) && pod.metadata.name == leader);
            (healthy && replaced).then_some(())
        },
    )
    .await;
    let converged_after = upgrade_started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let rollout = sampler.await.expect("the sampler");
    println!("upgrade: {rollout:?}; every object healthy {converged_after:?} after helm upgrade started");

    let new_pods = release.operator_pods().await;
    assert!(
        new_pods.len() == 1 && new_pods[0].metadata.name.as_deref() != Some(old_pod.as_str()),
        "the upgrade replaced the operator Pod"
    );
    let (new_image, new_image_id) = running_image(&new_pods[0]);
    println!("after the upgrade: {new_image} ({new_image_id})");
    assert_eq!(
        new_image,
        format!("ghcr.io/edge-operator/edge-operator:{}", env!("CARGO_PKG_VERSION")),
        "the chart's default image is this version's"
    );
    assert_ne!(
        new_image_id, old_image_id,
        "the Pod runs the new image, not the one the node held"
    );
    assert!(rollout.samples > 10, "{rollout:?}");
    assert!(
        rollout.most_running <= 2,
        "at most one Pod surged beside the old one: {rollout:?}"
    );
    let (stopped, leads) = (
        rollout.last_old_running.expect("the old operator was seen running"),
        rollout.first_new_leader.expect("the new operator took the Lease"),
    );
    let gap = leads.saturating_duration_since(stopped);
    println!("no operator leading for {gap:?}");
    assert!(
        gap <= LEASE,
        "the new operator leads {gap:?} after the old one stopped (Lease {LEASE:?})"
    );

    assert_eq!(
        platform_list(&release).await,
        (true, 3),
        "the change (Challenge) is applied"
    );
    // A look the new operator took: a reconcile of the AccessListConfig that succeeded,
    // which only the leader makes (its Pod is the metrics Service's only one now).
    let metrics = format!("{}-metrics", release.fullname());
    eventually(
        "a reconcile of the AccessListConfig by the new operator",
        WAIT,
        || async {
            let text = tokio::task::block_in_place(|| release.service_get(&metrics, "metrics", "/metrics"));
            text.lines()
                .any(|line| {
                    line.strip_prefix(r#"edge_operator_reconciles_total{kind="AccessListConfig",result="success"} "#)
                        .and_then(|count| count.trim().parse::<f64>().ok())
                        .is_some_and(|count| count >= 1.0)
                })
                .then_some(())
        },
    )
    .await;
    // The claim the previous release wrote is the one the new operator keeps: the same
    // record, owner and restore point.
    let claim_after = claim_of(&ns).expect("the claim of the upgraded object");
    assert_eq!(
        (&claim_after["metadata"]["uid"], &claim_after["spec"]),
        (&claim_before["metadata"]["uid"], &claim_before["spec"]),
        "the previous release's claim survives the upgrade as it was"
    );
    let writes_after = platform_writes(&release).await;
    let new_writes = &writes_after[writes_before.len()..];
    assert_eq!(
        new_writes,
        ["PATCH /shield/shield-zone/1001/access-lists/configurations/9101".to_string()],
        "one PATCH for the change and nothing written again, by either operator: {new_writes:?}"
    );

    // The restore point the previous release recorded survives the upgrade.
    kubectl(&["delete", "-n", &ns, EXAMPLES[0].1, "--timeout=60s"], None);
    assert_eq!(
        platform_list(&release).await,
        restore_point,
        "deleting the object restores what the previous release recorded"
    );
    assert_eq!(claim_of(&ns), None, "the restored configuration's claim is released");
    kubectl(&["delete", "-n", &ns, KINDS, "--all", "--timeout=60s"], None);
}
