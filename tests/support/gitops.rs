//! What the users' tools conclude about an object: Flux's kstatus (the library, built
//! by hack/k8s/build.sh as `kstatus`), the shipped Argo CD health check (run in a Lua
//! 5.1 interpreter, as Argo CD's gopher-lua runs it) and `kubectl wait`.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::cluster::{cluster, repo_root, test_tool};

/// The three verdicts on one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Current, InProgress, Failed...
    pub kstatus: String,
    /// Healthy, Progressing, Degraded, Suspended...
    pub argocd: String,
    /// Whether `kubectl wait --for=condition=Ready` succeeded.
    pub kubectl_wait: bool,
}

/// kstatus' (status, message) of an object as `kubectl get -o json` prints it.
pub(crate) fn kstatus(object: &Value) -> (String, String) {
    let mut child = Command::new(test_tool("kstatus"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kstatus runs (hack/k8s/build.sh --tools builds it)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(object.to_string().as_bytes())
        .expect("kstatus reads the object");
    let output = child.wait_with_output().expect("kstatus finishes");
    assert!(
        output.status.success(),
        "kstatus: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = String::from_utf8_lossy(&output.stdout).to_string();
    let mut fields = line.trim_end().splitn(3, '\t').skip(1);
    let status = fields.next().unwrap_or_default().to_string();
    (status, fields.next().unwrap_or_default().to_string())
}

/// The health check argocd-cm carries for `kind` (the shipped patch).
pub(crate) fn argocd_script(kind: &str) -> String {
    let path = repo_root().join("examples/gitops/argocd/argocd-cm-patch.yaml");
    let patch: Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).expect("the argocd-cm patch")).expect("YAML");
    patch["data"][format!("resource.customizations.health.edgeplatform.io_{kind}")]
        .as_str()
        .unwrap_or_else(|| panic!("argocd-cm has no health check of {kind}"))
        .to_string()
}

/// Argo CD's (status, message) of an object, from the shipped health check.
pub(crate) fn argocd_health(object: &Value) -> (String, String) {
    let kind = object["kind"].as_str().expect("an object with a kind");
    let program = format!(
        "obj = {}\nlocal function health()\n{}\nend\nlocal hs = health()\nio.write(hs.status, \"\\t\", hs.message or \"\")\n",
        lua_literal(object),
        argocd_script(kind)
    );
    let output = Command::new("lua5.1")
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().expect("stdin").write_all(program.as_bytes())?;
            child.wait_with_output()
        })
        .expect("lua5.1 runs (hack/test.sh installs it)");
    assert!(
        output.status.success(),
        "the health check fails in Lua 5.1: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let (status, message) = text.split_once('\t').unwrap_or((&text, ""));
    (status.to_string(), message.to_string())
}

/// A JSON value as a Lua table constructor, as Argo CD hands objects to its checks:
/// objects become tables keyed by member name, arrays tables indexed from 1, nulls
/// absent members.
fn lua_literal(value: &Value) -> String {
    match value {
        Value::Null => "nil".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => lua_string(s),
        Value::Array(items) => format!("{{{}}}", items.iter().map(lua_literal).collect::<Vec<_>>().join(", ")),
        Value::Object(members) => format!(
            "{{{}}}",
            members
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("[{}] = {}", lua_string(k), lua_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn lua_string(s: &str) -> String {
    let mut quoted = String::with_capacity(s.len() + 2);
    quoted.push('"');
    for byte in s.bytes() {
        match byte {
            b'"' | b'\\' => {
                quoted.push('\\');
                quoted.push(byte as char);
            }
            0x20..=0x7e => quoted.push(byte as char),
            _ => quoted.push_str(&format!("\\{byte:03}")),
        }
    }
    quoted.push('"');
    quoted
}

/// The object `resource/name` of `namespace` as `kubectl get -o json` prints it.
pub(crate) fn get_json(namespace: &str, resource: &str) -> Value {
    let (ok, stdout, stderr) = cluster().kubectl(&["get", "-n", namespace, resource, "-o", "json"], None);
    assert!(ok, "kubectl get {resource}: {stderr}");
    serde_json::from_str(&stdout).expect("JSON")
}

/// Whether `kubectl wait --for=condition=Ready` succeeds within `timeout` (e.g. "20s").
pub(crate) fn kubectl_wait_ready(namespace: &str, resource: &str, timeout: &str) -> bool {
    let (ok, _, _) = cluster().kubectl(
        &[
            "wait",
            "-n",
            namespace,
            resource,
            "--for=condition=Ready",
            &format!("--timeout={timeout}"),
        ],
        None,
    );
    ok
}

/// The three verdicts on `resource` (e.g. `accesslistconfig/shop`) now; `kubectl wait`
/// is given `timeout`.
pub(crate) fn judge(namespace: &str, resource: &str, timeout: &str) -> Verdict {
    let object = get_json(namespace, resource);
    let (kstatus, _) = kstatus(&object);
    let (argocd, _) = argocd_health(&object);
    Verdict {
        kstatus,
        argocd,
        kubectl_wait: kubectl_wait_ready(namespace, resource, timeout),
    }
}
