//! One real control plane per test run, a namespace per test.
//!
//! With `EDGE_TEST_KUBECONFIG` set (as `make test` does), the cluster it points to is
//! reused and left running. Otherwise the first test starts one with
//! `hack/cluster.sh up` under a name unique to this process and stops it when the test
//! binary exits, whether its tests passed or not.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

pub(crate) struct Cluster {
    pub kubeconfig: PathBuf,
    /// Set when this process started the cluster and must stop it.
    owned_name: Option<String>,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The package root: cargo's at run time, so that a test binary reused from another
/// checkout of the same sources (a shared target directory) reads this checkout.
pub(crate) fn repo_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

extern "C" fn stop_owned_cluster() {
    if let Some(Cluster {
        owned_name: Some(name), ..
    }) = CLUSTER.get()
    {
        let _ = Command::new(repo_root().join("hack/cluster.sh"))
            .arg("down")
            .env("EDGE_CLUSTER_NAME", name)
            .status();
    }
}

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> i32;
}

/// The shared cluster of this test run, started on first use, with the committed CRDs
/// (`crds/`) applied and Established.
pub(crate) fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| {
        let cluster = start_or_reuse();
        cluster.apply_crds();
        cluster
    })
}

/// A control plane of one test's own (for faults that would disturb other tests),
/// with the CRDs applied; stopped when dropped.
pub(crate) struct PrivateCluster {
    pub cluster: Cluster,
    name: String,
}

impl PrivateCluster {
    pub(crate) fn up(purpose: &str) -> Self {
        Self::with_feature_gates(purpose, "")
    }

    /// The same, its kube-apiserver started with `--feature-gates feature_gates`
    /// (`WatchList=false`: no streamed lists, as Kubernetes 1.30, 1.31 and 1.33).
    pub(crate) fn with_feature_gates(purpose: &str, feature_gates: &str) -> Self {
        let name = format!("{purpose}-{}", std::process::id());
        let cluster = Cluster {
            kubeconfig: cluster_up(&name, feature_gates),
            owned_name: None,
        };
        cluster.apply_crds();
        Self { cluster, name }
    }

    /// Kills kube-apiserver and starts it again (`hack/cluster.sh restart-apiserver`).
    pub(crate) fn restart_apiserver(&self) {
        let output = Command::new(repo_root().join("hack/cluster.sh"))
            .arg("restart-apiserver")
            .env("EDGE_CLUSTER_NAME", &self.name)
            .output()
            .expect("hack/cluster.sh runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("hack/cluster.sh"))
            .arg("down")
            .env("EDGE_CLUSTER_NAME", &self.name)
            .status();
    }
}

fn start_or_reuse() -> Cluster {
    if let Some(path) = std::env::var_os("EDGE_TEST_KUBECONFIG") {
        return Cluster {
            kubeconfig: PathBuf::from(path),
            owned_name: None,
        };
    }
    let name = format!("test-{}", std::process::id());
    // SAFETY: registering a plain extern "C" function with the C runtime.
    unsafe {
        atexit(stop_owned_cluster);
    }
    let kubeconfig = cluster_up(&name, "");
    Cluster {
        kubeconfig,
        owned_name: Some(name),
    }
}

/// `hack/cluster.sh up` for cluster `name`, its apiserver's feature gates set; its
/// kubeconfig.
fn cluster_up(name: &str, feature_gates: &str) -> PathBuf {
    let output = Command::new(repo_root().join("hack/cluster.sh"))
        .arg("up")
        .env("EDGE_CLUSTER_NAME", name)
        .env("EDGE_APISERVER_FEATURE_GATES", feature_gates)
        .output()
        .expect("hack/cluster.sh runs");
    assert!(
        output.status.success(),
        "hack/cluster.sh up failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let kubeconfig = stdout
        .lines()
        .find_map(|l| l.strip_prefix("export KUBECONFIG="))
        .expect("cluster.sh prints the kubeconfig");
    PathBuf::from(kubeconfig)
}

/// Directory of the pinned kubectl/helm binaries.
pub(crate) fn k8s_bin_dir() -> PathBuf {
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}/hack/k8s/versions.sh && echo $K8S_BIN_DIR",
            repo_root().display()
        ))
        .output()
        .expect("bash runs");
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// A tool the tests run (helm, kstatus, promtool, kube-state-metrics) or a file beside
/// them (`../monitoring-crds`), built by `hack/k8s/build.sh --tools` the first time one
/// is missing, as `make demo` builds only the control plane.
pub(crate) fn test_tool(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let path = k8s_bin_dir().join(name);
    if !path.exists() {
        BUILT.get_or_init(|| {
            let status = Command::new(repo_root().join("hack/k8s/build.sh"))
                .arg("--tools")
                .stdout(std::process::Stdio::null())
                .status()
                .expect("hack/k8s/build.sh runs");
            assert!(status.success(), "hack/k8s/build.sh --tools failed");
        });
    }
    path
}

/// The pinned Kubernetes version (`vX.Y.Z`).
pub(crate) fn pinned_version() -> String {
    pinned("K8S_VERSION")
}

/// A value `hack/k8s/versions.sh` pins (`NAME=value`).
pub(crate) fn pinned(name: &str) -> String {
    let versions = std::fs::read_to_string(repo_root().join("hack/k8s/versions.sh")).expect("versions.sh");
    versions
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("{name} is pinned in hack/k8s/versions.sh"))
        .trim()
        .to_string()
}

impl Cluster {
    pub(crate) async fn client(&self) -> Client {
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig).expect("readable kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("valid kubeconfig");
        Client::try_from(config).expect("client")
    }

    /// Whether `user` may `verb` `resource` in `scope` (a namespace, or `*` for all),
    /// as the apiserver's RBAC answers `kubectl auth can-i`.
    pub(crate) fn can_i(&self, user: &str, verb: &str, resource: &str, scope: &str) -> bool {
        let as_user = format!("--as={user}");
        let mut args = vec!["auth", "can-i", verb, resource, as_user.as_str()];
        match scope {
            "*" => args.push("--all-namespaces"),
            namespace => args.extend(["-n", namespace]),
        }
        let (_, answer, _) = self.kubectl(&args, None);
        answer.trim() == "yes"
    }

    /// What a failed wait for `namespace`'s Pods needs to be understood, shortest first:
    /// the namespace's Events (and the storage provisioner's, for a volume that never
    /// bound), its PersistentVolumeClaims, then every Pod described.
    pub(crate) fn why_not_ready(&self, namespace: &str) -> String {
        let events = |namespace: &str| {
            let (_, events, err) = self.kubectl(
                &[
                    "get",
                    "events",
                    "-n",
                    namespace,
                    "--sort-by=.lastTimestamp",
                    "-o",
                    "custom-columns=LAST:.lastTimestamp,TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message",
                ],
                None,
            );
            format!("{events}{err}")
        };
        let (_, claims, _) = self.kubectl(&["get", "pvc", "-n", namespace, "-o", "wide"], None);
        let (_, pods, _) = self.kubectl(&["describe", "pods", "-n", namespace], None);
        format!(
            "events in {namespace}:\n{}\nevents in local-path-storage:\n{}\nclaims:\n{claims}\n{pods}",
            events(namespace),
            events("local-path-storage"),
        )
    }

    /// Runs kubectl against this cluster, returning (success, stdout, stderr).
    pub(crate) fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        use std::io::Write;
        let mut child = Command::new(k8s_bin_dir().join("kubectl"))
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())
                .expect("write stdin");
        }
        drop(child.stdin.take());
        let output = child.wait_with_output().expect("kubectl finishes");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// A kubeconfig of this cluster's admin that impersonates `user` (for example
    /// `system:serviceaccount:ns:name`): what that identity may do, and no more.
    /// Removed when the returned file is dropped.
    pub(crate) fn kubeconfig_as(&self, user: &str) -> tempfile::NamedTempFile {
        let admin = std::fs::read_to_string(&self.kubeconfig).expect("kubeconfig");
        let impersonating = admin.replace("    client-key:", &format!("    as: {user}\n    client-key:"));
        let mut file = tempfile::Builder::new()
            .prefix("edge-operator-as-")
            .suffix(".kubeconfig")
            .tempfile()
            .expect("a kubeconfig file");
        std::io::Write::write_all(&mut file, impersonating.as_bytes()).expect("kubeconfig");
        file
    }

    /// Merges `status` into the status of `object` (`kind/name`) of `namespace`, as
    /// anyone granted its `/status` could.
    pub(crate) fn patch_status(&self, namespace: &str, object: &str, status: serde_json::Value) {
        let patch = serde_json::json!({ "status": status }).to_string();
        let (ok, _, stderr) = self.kubectl(
            &[
                "patch",
                object,
                "-n",
                namespace,
                "--subresource=status",
                "--type=merge",
                "-p",
                &patch,
            ],
            None,
        );
        assert!(ok, "{stderr}");
    }

    /// `kubectl apply` of a YAML document (or several, `---` apart), or of a [`Manifest`].
    ///
    /// [`Manifest`]: super::manifest::Manifest
    pub(crate) fn apply(&self, manifests: impl std::fmt::Display) {
        let (ok, _, stderr) = self.kubectl(&["apply", "-f", "-"], Some(&manifests.to_string()));
        assert!(ok, "{stderr}");
    }

    /// Applies every manifest in `dir`.
    pub(crate) fn apply_dir(&self, dir: &Path) {
        let (ok, _, stderr) = self.kubectl(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "-f",
                &dir.display().to_string(),
            ],
            None,
        );
        assert!(ok, "kubectl apply -f {}: {stderr}", dir.display());
        assert!(
            !stderr.contains("Warning:"),
            "kubectl apply -f {} warned: {stderr}",
            dir.display()
        );
    }

    /// Applies the Prometheus Operator's ServiceMonitor and PrometheusRule CRDs (fetched
    /// by `hack/k8s/build.sh --tools`), so the chart's monitoring objects validate server-side.
    pub(crate) fn apply_monitoring_crds(&self) {
        self.apply_crds_of(&test_tool("../monitoring-crds"));
    }

    /// Applies the committed CRDs (`crds/`).
    pub(crate) fn apply_crds(&self) {
        self.apply_crds_of(&repo_root().join("crds"));
    }

    /// Applies the CRDs in `dir` and waits until they are Established.
    fn apply_crds_of(&self, dir: &Path) {
        self.apply_dir(dir);
        let (ok, _, stderr) = self.kubectl(
            &[
                "wait",
                "--for=condition=Established",
                "-f",
                &dir.display().to_string(),
                "--timeout=60s",
            ],
            None,
        );
        assert!(ok, "CRDs of {} not Established: {stderr}", dir.display());
    }
}

/// A namespace of its own for one test, deleted when the test ends (also on panic).
pub(crate) struct TestNamespace {
    pub name: String,
    kubeconfig: PathBuf,
}

impl TestNamespace {
    pub(crate) fn create(prefix: &str) -> Self {
        Self::create_in(cluster(), prefix)
    }

    /// The same on `of`.
    pub(crate) fn create_in(of: &Cluster, prefix: &str) -> Self {
        let suffix: u32 = std::process::id()
            ^ (std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or_default());
        let name = format!("{prefix}-{:08x}", suffix);
        let (ok, _, stderr) = of.kubectl(&["create", "namespace", &name], None);
        assert!(ok, "create namespace {name}: {stderr}");
        Self {
            name,
            kubeconfig: of.kubeconfig.clone(),
        }
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        let of = Cluster {
            kubeconfig: self.kubeconfig.clone(),
            owned_name: None,
        };
        let _ = of.kubectl(&["delete", "namespace", &self.name, "--wait=false"], None);
    }
}
