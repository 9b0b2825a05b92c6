//! The command line of `edgectl`, as clap parses it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Command-line client of the Edge Platform API: Shield event search, access lists,
/// rate limits, container apps and CDN request logs.
#[derive(Debug, Parser)]
#[command(name = "edgectl", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub connection: Connection,
    /// Output format: human tables, or JSON or YAML for scripts.
    #[arg(short = 'o', long, global = true, value_enum, default_value = "table")]
    pub output: Output,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Connection {
    /// Base URL of the platform API (e.g. http://127.0.0.1:8080 for edge-sim).
    #[arg(long, env = "EDGE_API_URL", global = true)]
    pub api_url: Option<String>,
    /// Base URL of the logging API [default: the API URL].
    #[arg(long, env = "EDGE_LOGGING_URL", global = true)]
    pub logging_url: Option<String>,
    /// File holding the access key sent as the AccessKey header; else the environment
    /// variable EDGE_ACCESS_KEY. Never an argument: it would show in process lists.
    #[arg(long, env = "EDGE_ACCESS_KEY_FILE", global = true)]
    pub access_key_file: Option<std::path::PathBuf>,
    /// File holding a bearer token (JWT) for the logging API, used by `logs` instead of
    /// the access key; else the environment variable EDGE_BEARER_TOKEN.
    #[arg(long, env = "EDGE_BEARER_TOKEN_FILE", global = true)]
    pub bearer_token_file: Option<std::path::PathBuf>,
    /// Refused with a message saying what to use instead.
    #[arg(long, global = true, hide = true)]
    pub access_key: Option<String>,
    /// Refused with a message saying what to use instead.
    #[arg(long, global = true, hide = true)]
    pub bearer_token: Option<String>,
    /// Timeout of each request.
    #[arg(long, global = true, default_value = "30s")]
    pub timeout: humantime::Duration,
    /// Accept plain http to cluster-internal addresses (private IPs, Service names);
    /// otherwise http is accepted for loopback addresses only. Keys travel in clear text.
    #[arg(long, global = true)]
    pub allow_http_in_cluster: bool,
    #[command(flatten)]
    pub transport: crate::api::TransportFlags,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
    Yaml,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Shield security events.
    #[command(subcommand)]
    Events(EventsCommand),
    /// Shield rate-limit rules.
    #[command(subcommand)]
    RateLimits(ZoneListCommand),
    /// Shield access lists.
    #[command(subcommand)]
    AccessLists(AccessListsCommand),
    /// Pull Zone certificates.
    #[command(subcommand)]
    Cert(CertCommand),
    /// Container applications.
    #[command(subcommand)]
    App(AppCommand),
    /// CDN request logs of a Pull Zone.
    Logs(LogsArgs),
    /// What the operator would do for manifests, with read-only calls (exit 0: no
    /// change, 2: changes, 1: errors).
    Plan(PlanArgs),
    /// Manifests of what the platform already has, ready for a GitOps repository.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Whether the platform can be reached and used with these URLs, key, CAs and
    /// proxy: one line per check (name resolution, TLS, the key, the clock, the
    /// logging API, the zones, Pull Zones and apps named), exit 1 on a failure.
    Doctor(DoctorArgs),
    /// The staged rollout of an AccessListConfig (spec.rollout), read from the cluster
    /// of the current kubeconfig context.
    #[command(subcommand)]
    Rollout(RolloutCommand),
    /// A shell completion script, e.g. `source <(edgectl completion bash)`.
    Completion {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Where the rollout stands, and its evidence: matches, distinct IPs, the top
    /// values, the sparkline over the window and the digest an approval names.
    Status(RolloutArgs),
    /// Approves the evidence shown in status (Manual promotion): writes the annotation
    /// edgeplatform.io/promote with its digest.
    Promote(RolloutArgs),
}

#[derive(Debug, Args)]
pub struct RolloutArgs {
    /// The AccessListConfig.
    pub name: String,
    /// Its namespace [default: the kubeconfig context's].
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The kubeconfig file [default: $KUBECONFIG, else ~/.kube/config, else the
    /// in-cluster ServiceAccount].
    #[arg(long)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context [default: its current context].
    #[arg(long)]
    pub context: Option<String>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A Shield Zone the key must see (its access lists are read). Repeatable.
    #[arg(long = "zone")]
    pub zones: Vec<i64>,
    /// A Pull Zone whose logs the key must read. Repeatable.
    #[arg(long = "pull-zone")]
    pub pull_zones: Vec<i64>,
    /// An application the key must see. Repeatable.
    #[arg(long = "app")]
    pub apps: Vec<String>,
    /// The largest difference allowed between this machine's clock and the platform's.
    #[arg(long, default_value = "30s")]
    pub max_clock_skew: humantime::Duration,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Manifest files or folders (read recursively), or `-` for a multi-document stream
    /// on standard input (e.g. `kustomize build | edgectl plan -f -`). Repeatable.
    #[arg(short = 'f', long = "filename", required = true)]
    pub filenames: Vec<String>,
    /// A YAML stream of the Secrets that manifests reference (their keys are never printed).
    #[arg(long)]
    pub secrets_from: Option<PathBuf>,
    /// Namespace of manifests that name none.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// One AccessListConfig per access list of a Shield Zone, holding its current values.
    AccessLists {
        /// Shield Zone id.
        #[arg(long)]
        zone: i64,
        /// managementPolicy Manage instead of Observe (the operator then corrects drift).
        #[arg(long)]
        manage: bool,
        /// metadata.namespace of the objects (none: the namespace `kubectl apply` uses).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Search the event log of a Shield Zone, flat or grouped.
    Search(SearchArgs),
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Shield Zone id.
    #[arg(long)]
    pub zone: i64,
    /// Search the window ending now and starting this long ago (e.g. 15m, 1h, 2d).
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub since: Option<humantime::Duration>,
    /// Window start: RFC 3339 or Unix milliseconds.
    #[arg(long, requires = "to")]
    pub from: Option<String>,
    /// Window end (exclusive): RFC 3339 or Unix milliseconds.
    #[arg(long, requires = "from")]
    pub to: Option<String>,
    /// Free text: every word must appear in the IP, rule id, URL, user agent or rule name.
    #[arg(long)]
    pub query: Option<String>,
    /// Filter `field:op:value[,value...]`; ops eq, in, contains, cidr (ip), wildcard. Repeatable.
    #[arg(long = "filter")]
    pub filters: Vec<String>,
    /// Group by these dimensions, comma-separated (feature, ruleId, ip, ja4, ua, url, asn, country, action).
    #[arg(long)]
    pub group_by: Option<String>,
    /// Sparkline buckets per group (grouped searches).
    #[arg(long)]
    pub buckets: Option<i32>,
    /// Zero-based page.
    #[arg(long, default_value_t = 0)]
    pub page: i32,
    /// Rows or groups per page (1-500).
    #[arg(long, default_value_t = 50)]
    pub page_size: i32,
}

#[derive(Debug, Subcommand)]
pub enum ZoneListCommand {
    /// List them (every page).
    List {
        /// Shield Zone id.
        #[arg(long)]
        zone: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum AccessListsCommand {
    /// List them (managed and custom).
    List {
        /// Shield Zone id.
        #[arg(long)]
        zone: i64,
    },
    /// Enable, disable or change the action of one list; prints before → after.
    Set(SetArgs),
}

#[derive(Debug, Args)]
pub struct SetArgs {
    /// Shield Zone id.
    #[arg(long)]
    pub zone: i64,
    /// The list's configuration id (the `CONFIGURATION` column of `list`).
    #[arg(long, required_unless_present = "name", conflicts_with = "name")]
    pub configuration: Option<i64>,
    /// The list's exact name; must name exactly one list of the zone.
    #[arg(long)]
    pub name: Option<String>,
    /// Enable (true) or disable (false) the list.
    #[arg(long)]
    pub enabled: Option<bool>,
    /// Action: None, Allow, Block, Challenge, Log, Bypass (or 0 to 5).
    #[arg(long)]
    pub action: Option<String>,
    /// Show what would change without changing it.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand)]
pub enum CertCommand {
    /// Complete the external HTTP certificate of a hostname (exit 0 once issued).
    Complete {
        /// A hostname of one of the account's Pull Zones.
        #[arg(long)]
        hostname: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AppCommand {
    /// Show one application.
    Get {
        /// Application id.
        id: String,
    },
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Pull Zone id.
    #[arg(long)]
    pub pull_zone: i64,
    /// Entries of the last this long (e.g. 30m, 6h) [default: the platform's, 24h].
    #[arg(long, conflicts_with = "day")]
    pub since: Option<humantime::Duration>,
    /// Read the legacy v1 file of this UTC day (MM-dd-yy) instead of the v2 API.
    #[arg(long, conflicts_with = "follow")]
    pub day: Option<String>,
    /// Status codes or classes, comma-separated (e.g. 5xx,404).
    #[arg(long)]
    pub status: Option<String>,
    /// Cache statuses, comma-separated (HIT, MISS, BYPASS, REVALIDATED, STALE, UPDATING, -).
    #[arg(long)]
    pub cache_status: Option<String>,
    /// Free-text search.
    #[arg(long)]
    pub search: Option<String>,
    /// At most this many entries (all pages are followed).
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// Keep polling for new entries until interrupted.
    #[arg(long)]
    pub follow: bool,
    /// Poll interval of --follow.
    #[arg(long, default_value = "5s")]
    pub interval: humantime::Duration,
}
