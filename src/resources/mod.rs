//! What the custom resources of group `edgeplatform.io/v1alpha1` share: conditions,
//! Secret references, event filters, annotations, the time and duration formats
//! (`time`), the traits the driver reads of every
//! kind, and how a CRD's schema is written. Each kind's resource lives in its folder
//! of `controller::kinds`, whose registry lists them.

// clippy reads the repeated `printcolumn(name = .., type_ = ..)` entries of the
// CustomResource derive as duplicated attributes; they are distinct columns.
#![allow(clippy::duplicated_attributes)]
// The KubeSchema derive re-declares each spec in a private module of its own, which
// `unreachable_pub` reports; the specs themselves are exported.
#![allow(unreachable_pub)]

pub mod time;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::models::shield::{Dimension, FilterOp};

/// `"true"` stops all action on the object (condition Synced=False, reason Paused).
pub const ANNOTATION_PAUSED: &str = "edgeplatform.io/paused";
/// Any new value asks for an immediate reconcile.
pub const ANNOTATION_RECONCILE_REQUESTED_AT: &str = "edgeplatform.io/reconcile-requested-at";
/// Overrides the operator's `--resync` period for one object (e.g. `2m`).
pub const ANNOTATION_POLL_INTERVAL: &str = "edgeplatform.io/poll-interval";
/// The shortest poll interval an annotation or spec can ask for.
pub const MIN_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
/// The digest of the evidence in an AccessListConfig's status: promotes its Manual rollout.
pub const ANNOTATION_PROMOTE: &str = "edgeplatform.io/promote";

/// The most a kind's decided status may take once serialized, with its decided
/// conditions merged in (a kind that copies what the platform sends cuts it to fit; the
/// others write far less).
pub const DECIDED_STATUS_BYTES: usize = 64 << 10;

/// The length of `value` serialized as JSON, counted without holding the text.
pub fn serialized_len(value: &impl serde::Serialize) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Whether the object carries `edgeplatform.io/paused: "true"`.
pub fn is_paused<K: kube::ResourceExt>(object: &K) -> bool {
    object
        .annotations()
        .get(ANNOTATION_PAUSED)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The object's re-read period: its poll-interval annotation, else `default`; never
/// shorter than `floor`, nor than [`MIN_POLL_INTERVAL`].
pub fn poll_interval<K: kube::ResourceExt>(
    object: &K,
    default: std::time::Duration,
    floor: std::time::Duration,
) -> std::time::Duration {
    object
        .annotations()
        .get(ANNOTATION_POLL_INTERVAL)
        .and_then(|v| time::parse_go_duration(v))
        .filter(|d| !d.is_zero())
        .unwrap_or(default)
        .max(floor)
        .max(MIN_POLL_INTERVAL)
}

/// The key of an object in per-object bookkeeping: `Kind/namespace/name`.
pub fn object_key<K: kube::Resource<DynamicType = ()> + kube::ResourceExt>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}

/// The first 10 hex digits of the SHA-256 of `bytes`: a name, not a proof.
pub fn short_digest(bytes: &[u8]) -> String {
    hex_digest(bytes, 5)
}

/// The first `length` bytes of the SHA-256 of `bytes`, in hex.
pub fn hex_digest(bytes: &[u8], length: usize) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    digest
        .as_ref()
        .iter()
        .take(length)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A key of a Secret in the object's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct SecretKeyRef {
    /// Name of the Secret, in the namespace of this object.
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub name: String,
    /// Key within the Secret whose value is the platform access key.
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[-._a-zA-Z0-9]+$"))]
    pub key: String,
}

/// One event filter: values are OR-combined, filters AND-combined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(deny_unknown_fields)]
#[x_kube(validation = Rule::new("self.op != 'cidr' || self.field == 'ip'").message("op cidr applies to field ip only"))]
pub struct EventFilter {
    /// Dimension to filter on.
    pub field: Dimension,
    /// eq, in, contains (case-insensitive), cidr (ip only), wildcard (`*`).
    pub op: FilterOp,
    /// Values, OR-combined: at most 20 of 128 bytes (a filter's spec, cached for every
    /// object, stays within 3 KiB).
    #[schemars(length(min = 1, max = 20), inner(length(min = 1, max = 128)))]
    pub value: Vec<String>,
}

/// Status of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// An observation of one aspect of the object, in the Kubernetes condition convention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type, e.g. Ready or Synced.
    #[serde(rename = "type")]
    #[schemars(length(max = 316))]
    pub type_: String,
    /// True, False or Unknown.
    pub status: ConditionStatus,
    /// Machine-readable CamelCase reason of the last transition.
    #[schemars(length(max = 1024))]
    pub reason: String,
    /// Human-readable details.
    #[serde(default)]
    pub message: String,
    /// When the status last changed (RFC 3339).
    #[schemars(length(max = 64))]
    pub last_transition_time: String,
    /// The metadata.generation the condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// What every kind's status has: its conditions and the generation it describes.
pub trait StatusConditions {
    fn conditions(&self) -> &[Condition];
    fn set_conditions(&mut self, conditions: Vec<Condition>);
    fn observed_generation(&self) -> Option<i64>;
    fn set_observed_generation(&mut self, generation: Option<i64>);
}

/// An object of a kind the operator reconciles, beside its spec: its status and the
/// Secret holding its access key.
pub trait EdgeObject {
    type Status: StatusConditions + Clone + Default + PartialEq + Serialize + Send + Sync;

    fn status(&self) -> Option<&Self::Status>;
    fn status_mut(&mut self) -> Option<&mut Self::Status>;
    /// The Secret holding the object's access key (the operator's default key when none).
    fn secret_ref(&self) -> Option<&SecretKeyRef>;
}

/// Implements [`StatusConditions`] for a kind's status and [`EdgeObject`] for the kind:
/// a status with `conditions` and `observed_generation`, a spec with
/// `access_key_secret_ref`.
macro_rules! edge_object {
    ($kind:ty => $status:ty) => {
        impl $crate::resources::StatusConditions for $status {
            fn conditions(&self) -> &[$crate::resources::Condition] {
                &self.conditions
            }

            fn set_conditions(&mut self, conditions: Vec<$crate::resources::Condition>) {
                self.conditions = conditions;
            }

            fn observed_generation(&self) -> Option<i64> {
                self.observed_generation
            }

            fn set_observed_generation(&mut self, generation: Option<i64>) {
                self.observed_generation = generation;
            }
        }

        impl $crate::resources::EdgeObject for $kind {
            type Status = $status;

            fn status(&self) -> Option<&$status> {
                self.status.as_ref()
            }

            fn status_mut(&mut self) -> Option<&mut $status> {
                self.status.as_mut()
            }

            fn secret_ref(&self) -> Option<&$crate::resources::SecretKeyRef> {
                self.spec.access_key_secret_ref.as_ref()
            }
        }
    };
}

pub(crate) use edge_object;

/// The integer formats the apiserver knows. schemars names unsigned Rust types
/// `uint16`/`uint32`, which the apiserver warns about on every apply; their bounds
/// stay in `minimum`/`maximum`.
fn kubernetes_format(format: &str) -> Option<&'static str> {
    match format {
        "uint8" | "uint16" | "int8" | "int16" => Some("int32"),
        "uint32" | "uint64" | "uint" => Some("int64"),
        _ => None,
    }
}

/// The values a Rust integer of `format` holds. The apiserver checks `minimum` and
/// `maximum`, not the range a format names: without them a status writer could store
/// a number the operator cannot decode, and its watch of the kind would fail for every
/// tenant.
fn rust_range(format: &str) -> Option<(i64, i64)> {
    match format {
        "int8" => Some((i8::MIN.into(), i8::MAX.into())),
        "int16" => Some((i16::MIN.into(), i16::MAX.into())),
        "int32" => Some((i32::MIN.into(), i32::MAX.into())),
        "uint8" => Some((0, u8::MAX.into())),
        "uint16" => Some((0, u16::MAX.into())),
        "uint32" => Some((0, u32::MAX.into())),
        "uint64" | "uint" => Some((0, i64::MAX)),
        _ => None,
    }
}

/// Gives the integer formats the apiserver knows, each bounded by its Rust range.
fn use_kubernetes_formats(node: &mut serde_json::Value) {
    match node {
        serde_json::Value::Object(members) => {
            let format = members
                .get("format")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string);
            if let Some((least, most)) = format.as_deref().and_then(rust_range) {
                let bound = |members: &serde_json::Map<String, serde_json::Value>, keyword: &str| {
                    members.get(keyword).and_then(serde_json::Value::as_f64)
                };
                if bound(members, "minimum").is_none_or(|minimum| minimum < least as f64) {
                    members.insert("minimum".into(), least.into());
                }
                if bound(members, "maximum").is_none_or(|maximum| maximum > most as f64) {
                    members.insert("maximum".into(), most.into());
                }
            }
            if let Some(known) = format.as_deref().and_then(kubernetes_format) {
                members.insert("format".into(), known.into());
            }
            members.values_mut().for_each(use_kubernetes_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(use_kubernetes_formats),
        _ => {}
    }
}

/// The longest text of a status member whose type sets no bound of its own (the
/// operator cuts what it copies from the platform to 1,024 bytes or less).
pub const STATUS_TEXT_CHARS: u64 = 2048;
/// The most items of a status list whose type sets no bound of its own.
pub const STATUS_LIST_ITEMS: u64 = 200;
/// The most entries of a status map whose type sets no bound of its own.
pub const STATUS_MAP_ENTRIES: u64 = 20;

/// Bounds every text, list and map of a status schema that its type leaves unbounded:
/// the apiserver then refuses a status larger than the operator ever writes, so no
/// status writer can grow the objects the operator caches.
fn bound_status(node: &mut serde_json::Value) {
    let serde_json::Value::Object(members) = node else {
        return;
    };
    let bound = match members.get("type").and_then(serde_json::Value::as_str) {
        Some("string") => Some(("maxLength", STATUS_TEXT_CHARS)),
        Some("array") => Some(("maxItems", STATUS_LIST_ITEMS)),
        Some("object") if members.contains_key("additionalProperties") => Some(("maxProperties", STATUS_MAP_ENTRIES)),
        _ => None,
    };
    if let Some((keyword, limit)) = bound
        && !members.contains_key(keyword)
        && !members.contains_key("enum")
    {
        members.insert(keyword.into(), limit.into());
    }
    for child in ["properties", "additionalProperties", "items"] {
        match members.get_mut(child) {
            Some(serde_json::Value::Object(properties)) if child == "properties" => {
                properties.values_mut().for_each(bound_status);
            }
            Some(schema) => bound_status(schema),
            None => {}
        }
    }
}

/// Applies [`use_kubernetes_formats`] to every schema of `crd`, and [`bound_status`] to
/// its status.
pub(crate) fn rewrite_schemas(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        let Some(validation) = version.schema.as_mut() else {
            continue;
        };
        let Ok(mut schema) = serde_json::to_value(&validation.open_api_v3_schema) else {
            continue;
        };
        use_kubernetes_formats(&mut schema);
        if let Some(status) = schema.pointer_mut("/properties/status") {
            bound_status(status);
        }
        if let Ok(rewritten) = serde_json::from_value(schema) {
            validation.open_api_v3_schema = rewritten;
        }
    }
    crd
}

/// The CRDs as one multi-document YAML stream, as committed under `crds/`.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml::Error> {
    serde_yaml::to_string(crd).map(|yaml| format!("---\n{yaml}"))
}

/// A CRD as a template of the Helm chart (`charts/edge-operator/templates/crds/`): the
/// YAML of [`to_yaml`], rendered only when `crds.enabled`, with the release's labels and,
/// when `crds.keep`, `helm.sh/resource-policy: keep` (an uninstall leaves the CRD, and
/// so every object of its kind). Template delimiters in the YAML are escaped.
pub fn to_chart_template(crd: &CustomResourceDefinition) -> Result<String, serde_yaml::Error> {
    let yaml = to_yaml(crd)?;
    let yaml = yaml.trim_start_matches("---\n").replace("{{", r#"{{ "{{" }}"#);
    let name = format!(
        "metadata:\n  name: {}\n",
        crd.metadata.name.as_deref().unwrap_or_default()
    );
    let metadata = format!(
        "{name}  labels:\n    {{{{- include \"edge-operator.labels\" . | nindent 4 }}}}\n  \
         {{{{- if .Values.crds.keep }}}}\n  annotations:\n    helm.sh/resource-policy: keep\n  {{{{- end }}}}\n"
    );
    Ok(format!(
        "{{{{- if .Values.crds.enabled }}}}\n{}{{{{- end }}}}\n",
        yaml.replacen(&name, &metadata, 1)
    ))
}

/// File name of a CRD under `crds/`: `<plural>.<group>.yaml`.
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("crd"))
}
