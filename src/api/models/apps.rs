//! Container applications (`GET /mc/apps/{appId}`).
//!
//! Reads are lenient: unknown members are ignored, missing members take defaults and
//! enum strings are matched case-insensitively (the platform's docs capitalise them).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::parse_case_insensitive;

/// Lifecycle status of an application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AppStatus {
    #[default]
    Unknown,
    Active,
    Progressing,
    Inactive,
    Failing,
    Suspended,
}

impl AppStatus {
    const CASES: [(&'static str, AppStatus); 6] = [
        ("unknown", AppStatus::Unknown),
        ("active", AppStatus::Active),
        ("progressing", AppStatus::Progressing),
        ("inactive", AppStatus::Inactive),
        ("failing", AppStatus::Failing),
        ("suspended", AppStatus::Suspended),
    ];

    pub fn as_str(self) -> &'static str {
        Self::CASES
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("unknown", |(name, _)| name)
    }

    /// Capitalised name, used as a Kubernetes condition reason (`Active`, `Failing`...).
    pub fn reason(self) -> &'static str {
        match self {
            AppStatus::Unknown => "Unknown",
            AppStatus::Active => "Active",
            AppStatus::Progressing => "Progressing",
            AppStatus::Inactive => "Inactive",
            AppStatus::Failing => "Failing",
            AppStatus::Suspended => "Suspended",
        }
    }
}

impl fmt::Display for AppStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AppStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AppStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Option::<String>::deserialize(d)?.unwrap_or_default();
        Ok(parse_case_insensitive(&raw, &Self::CASES, AppStatus::Unknown))
    }
}

/// Runtime type of an application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RuntimeType {
    #[default]
    Shared,
    Reserved,
}

impl RuntimeType {
    const CASES: [(&'static str, RuntimeType); 2] =
        [("shared", RuntimeType::Shared), ("reserved", RuntimeType::Reserved)];

    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeType::Shared => "shared",
            RuntimeType::Reserved => "reserved",
        }
    }
}

impl Serialize for RuntimeType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RuntimeType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Option::<String>::deserialize(d)?.unwrap_or_default();
        Ok(parse_case_insensitive(&raw, &Self::CASES, RuntimeType::Shared))
    }
}

/// Deserializes `null` as the type's default, so a nullable member never fails a read.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

macro_rules! lenient_struct {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $($(#[$fmeta])* #[serde(default, deserialize_with = "null_as_default")] pub $field: $ty,)*
        }
    };
}

lenient_struct! {
    /// A container application.
    pub struct Application {
        pub id: String,
        pub name: String,
        pub status: AppStatus,
        pub runtime_type: RuntimeType,
        pub region_settings: RegionSettings,
        pub container_templates: Vec<ContainerTemplate>,
        pub container_instances: Vec<ContainerInstance>,
        pub volumes: Vec<Volume>,
        pub display_endpoint: DisplayEndpoint,
        pub auto_scaling: AutoScaling,
        pub network_settings: NetworkSettings,
        pub repository_settings: RepositorySettings,
    }
}

lenient_struct! {
    pub struct RegionSettings {
        pub allowed_region_ids: Vec<String>,
        pub required_region_ids: Vec<String>,
        pub max_allowed_regions: i64,
        pub provisioning_type: String,
    }
}

lenient_struct! {
    pub struct ContainerTemplate {
        pub id: String,
        pub name: String,
        pub package_id: String,
        pub image: String,
        pub image_name: String,
        pub image_namespace: String,
        pub image_tag: String,
        pub image_registry_id: String,
        pub image_digest: String,
        pub image_pull_policy: String,
        pub entry_point: EntryPoint,
        pub probes: Probes,
        pub environment_variables: Vec<EnvironmentVariable>,
        pub endpoints: Vec<TemplateEndpoint>,
        pub volume_mounts: Vec<VolumeMount>,
    }
}

lenient_struct! {
    pub struct EntryPoint {
        pub command: String,
        pub command_array: Vec<String>,
        pub arguments: String,
        pub arguments_array: Vec<String>,
        pub working_directory: String,
    }
}

lenient_struct! {
    pub struct Probes {
        pub startup: Option<Probe>,
        pub readiness: Option<Probe>,
        pub liveness: Option<Probe>,
    }
}

lenient_struct! {
    pub struct Probe {
        pub initial_delay_seconds: i64,
        pub period_seconds: i64,
        pub timeout_seconds: i64,
        pub failure_threshold: i64,
        pub success_threshold: i64,
        pub http_get: Option<HttpGetProbe>,
        pub tcp_socket: Option<PortProbe>,
        pub grpc: Option<GrpcProbe>,
    }
}

lenient_struct! {
    pub struct HttpGetProbe {
        pub request: HttpGetRequest,
        pub response: HttpGetResponse,
    }
}

lenient_struct! {
    pub struct HttpGetRequest {
        pub path: String,
        pub port_number: i64,
    }
}

lenient_struct! {
    pub struct HttpGetResponse {
        pub expected_status_code: String,
    }
}

lenient_struct! {
    pub struct PortProbe {
        pub request: PortRequest,
    }
}

lenient_struct! {
    pub struct PortRequest {
        pub port_number: i64,
    }
}

lenient_struct! {
    pub struct GrpcProbe {
        pub request: GrpcRequest,
    }
}

lenient_struct! {
    pub struct GrpcRequest {
        pub port_number: i64,
        pub service_name: String,
    }
}

lenient_struct! {
    pub struct EnvironmentVariable {
        pub name: String,
        pub value: String,
    }
}

lenient_struct! {
    pub struct TemplateEndpoint {
        pub id: String,
        pub display_name: String,
        pub public_host: String,
        #[serde(rename = "type")]
        pub endpoint_type: String,
        pub is_ssl_enabled: bool,
        pub pull_zone_id: String,
        pub port_mappings: Vec<PortMapping>,
        pub sticky_sessions: StickySessions,
        pub internal_ip_addresses: Vec<IpAddressInRegion>,
        pub public_ip_addresses: Vec<IpAddressInRegion>,
    }
}

lenient_struct! {
    pub struct PortMapping {
        pub container_port: i64,
        pub exposed_port: i64,
        pub protocols: Vec<String>,
    }
}

lenient_struct! {
    pub struct StickySessions {
        pub enabled: bool,
        pub session_headers: Vec<String>,
        pub cookie_name: String,
    }
}

lenient_struct! {
    pub struct IpAddressInRegion {
        pub address: String,
        pub region: String,
    }
}

lenient_struct! {
    pub struct VolumeMount {
        pub name: String,
        pub mount_path: String,
    }
}

lenient_struct! {
    pub struct ContainerInstance {
        pub id: String,
        pub template_id: String,
        pub pod_id: String,
        pub node_ip_address: String,
    }
}

lenient_struct! {
    pub struct Volume {
        pub name: String,
        pub size: i64,
    }
}

lenient_struct! {
    pub struct DisplayEndpoint {
        pub id: String,
        pub address: String,
        #[serde(rename = "type")]
        pub endpoint_type: String,
    }
}

lenient_struct! {
    pub struct AutoScaling {
        pub min: i64,
        pub max: i64,
    }
}

lenient_struct! {
    pub struct NetworkSettings {
        pub ingress_bandwidth_limit: i64,
        pub egress_bandwidth_limit: i64,
    }
}

lenient_struct! {
    pub struct RepositorySettings {
        pub template_repository: String,
        pub repository_name: String,
        pub owner: String,
    }
}

impl Application {
    /// Public hosts of every template endpoint, in template order.
    pub fn public_hosts(&self) -> Vec<String> {
        self.container_templates
            .iter()
            .flat_map(|t| &t.endpoints)
            .filter(|e| !e.public_host.is_empty())
            .map(|e| e.public_host.clone())
            .collect()
    }

    /// The Pull Zone of the first endpoint that has one.
    pub fn endpoint_pull_zone_id(&self) -> Option<i64> {
        self.container_templates
            .iter()
            .flat_map(|t| &t.endpoints)
            .find_map(|e| e.pull_zone_id.trim().parse().ok())
    }
}
