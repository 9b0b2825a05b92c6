//! `edge-operator`: the Kubernetes operator of the Edge Platform.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use edge_operator::controller::framework::backoff::certificate_policy;
use edge_operator::controller::framework::context::Settings;
use edge_operator::controller::framework::credentials::NamespaceSet;
use edge_operator::controller::runtime::{LeaderElection, RunConfig, run};

/// Kubernetes operator for the Edge Platform: AccessListConfig, PullZoneCertificate and
/// ContainerAppWatch (edgeplatform.io/v1alpha1).
#[derive(Debug, Parser)]
#[command(name = "edge-operator", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controllers against the cluster of the current kubeconfig or service account.
    Run(Box<RunArgs>),
    /// Check a running installation (the chart's `helm test`): the operator answers
    /// ready, and every kind round-trips through the apiserver's schema (dry runs only).
    Check {
        /// Base URL of the operator's health endpoints (its metrics Service).
        #[arg(long)]
        health_url: String,
        /// How long the operator may take to answer ready.
        #[arg(long, default_value = "60s")]
        ready_within: humantime::Duration,
        /// Namespace of the dry-run objects.
        #[arg(long, env = "POD_NAMESPACE")]
        namespace: String,
    },
    /// Print the CustomResourceDefinitions as YAML, or write one file per CRD.
    Crds {
        /// Write `<crd name>.yaml` files into this directory instead of printing
        /// (repeatable: `make crds` writes `crds/` and the chart's `crds/`).
        #[arg(long)]
        dir: Vec<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Base URL of the platform API.
    #[arg(long, env = "EDGE_API_URL")]
    api_url: String,
    /// Base URL of the logging API [default: the API URL].
    #[arg(long, env = "EDGE_LOGGING_URL")]
    logging_url: Option<String>,
    /// File holding the operator's default access key (objects without
    /// spec.accessKeySecretRef use it).
    #[arg(long, env = "EDGE_ACCESS_KEY_FILE")]
    access_key_file: Option<PathBuf>,
    /// Watch only this namespace [default: all namespaces].
    #[arg(long, env = "EDGE_WATCH_NAMESPACE")]
    namespace: Option<String>,
    /// How often managed objects are re-read from the platform to find drift.
    #[arg(long, default_value = "10m")]
    resync: humantime::Duration,
    /// Reconciles running at once per kind (AccessListConfig, PullZoneCertificate).
    #[arg(long, default_value_t = 8)]
    concurrency: u16,
    /// ContainerAppWatch polls running at once. They mostly wait for the platform quota,
    /// which serves them in the order they fall due; beyond this many, the due ones wait
    /// in no particular order.
    #[arg(long, default_value_t = 4096)]
    poll_concurrency: u16,
    /// Requests per second to the platform, all objects together (0: unlimited).
    #[arg(long, default_value_t = 50)]
    platform_rate: u32,
    /// First delay between certificate completion attempts (doubles up to 1h).
    #[arg(long, default_value = "30s")]
    certificate_backoff: humantime::Duration,
    /// Logging requests (pages of 1,000 entries) one CDN summary may make per poll. A
    /// summary reads only the logs it has not read yet; when this budget cannot keep
    /// up, it says which share of its window it covers (CdnLogsSynced=False, Partial).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    cdn_pages_per_poll: u32,
    /// How long the platform takes to make a request's log entry readable. A summary
    /// ends this long before its poll, so entries that arrive late are still counted.
    #[arg(long, default_value = "0s")]
    cdn_log_delay: humantime::Duration,
    /// The longest a ContainerAppWatch keeps an unchanged status: a poll that finds the
    /// same data writes nothing, except to refresh `status.observedAt` once it is this
    /// old.
    #[arg(long, default_value = "1h")]
    status_refresh: humantime::Duration,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Namespaces whose objects may use the operator's own key, comma-separated, or `*`
    /// for every namespace [default: none]; objects elsewhere must reference a Secret.
    #[arg(long, value_delimiter = ',')]
    default_key_namespaces: Vec<String>,
    /// Namespaces whose Secrets objects may reference, comma-separated, or `*` for every
    /// namespace [default: the --namespace watched, else none]. The operator watches
    /// Secret metadata and reads referenced Secrets there only; grant it that much.
    #[arg(long, value_delimiter = ',')]
    secret_namespaces: Vec<String>,
    /// Put a finalizer on Secrets that AccessListConfigs with deletionPolicy Restore
    /// need, so a namespace deletion keeps them until the restore is done (needs
    /// `patch` on those Secrets).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    protect_secrets: bool,
    /// Elect a leader through a Lease: only the leader reconciles.
    #[arg(long)]
    leader_elect: bool,
    /// Name of the Lease.
    #[arg(long, default_value = "edge-operator")]
    lease_name: String,
    /// Namespace of the Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    lease_namespace: String,
    /// Identity in the Lease [default: the host name and process id].
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// How long a leader's Lease lasts without renewal; a standby takes over after it.
    #[arg(long, default_value = "15s")]
    lease_duration: humantime::Duration,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    log_format: edge_operator::telemetry::LogFormat,
}

/// A shorter Lease leaves no time to renew before the leader must stop acting.
const MIN_LEASE_DURATION: std::time::Duration = std::time::Duration::from_secs(3);
/// A shorter refresh would rewrite a status at nearly every poll.
const MIN_STATUS_REFRESH: std::time::Duration = std::time::Duration::from_secs(10);

async fn run_operator(args: RunArgs) -> anyhow::Result<()> {
    edge_operator::telemetry::init(args.log_format);
    let lease_duration: std::time::Duration = args.lease_duration.into();
    anyhow::ensure!(
        lease_duration >= MIN_LEASE_DURATION,
        "--lease-duration must be at least {}s",
        MIN_LEASE_DURATION.as_secs()
    );
    anyhow::ensure!(
        std::time::Duration::from(args.status_refresh) >= MIN_STATUS_REFRESH,
        "--status-refresh must be at least {}s",
        MIN_STATUS_REFRESH.as_secs()
    );
    let identity = args.identity.clone().unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        format!("{}-{}", host.trim(), std::process::id())
    });
    let config = RunConfig {
        logging_url: args.logging_url.clone().unwrap_or_else(|| args.api_url.clone()),
        api_url: args.api_url,
        access_key_file: args.access_key_file,
        secret_namespaces: match (args.secret_namespaces.is_empty(), &args.namespace) {
            (true, Some(watched)) => NamespaceSet::parse(std::slice::from_ref(watched)),
            _ => NamespaceSet::parse(&args.secret_namespaces),
        },
        namespace: args.namespace,
        concurrency: args.concurrency.max(1),
        poll_concurrency: args.poll_concurrency.max(1),
        metrics_addr: args.metrics_addr,
        platform_rate: args.platform_rate,
        settings: Settings {
            resync: args.resync.into(),
            certificate_backoff: certificate_policy(args.certificate_backoff.into()),
            cdn_pages_per_poll: args.cdn_pages_per_poll,
            cdn_log_delay: args.cdn_log_delay.into(),
            status_refresh: args.status_refresh.into(),
            protect_secrets: args.protect_secrets,
        },
        default_key_namespaces: NamespaceSet::parse(&args.default_key_namespaces),
        leader_election: args.leader_elect.then_some(LeaderElection {
            lease_name: args.lease_name,
            lease_namespace: args.lease_namespace,
            identity,
            lease_duration,
        }),
    };
    run(config).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Run(args) => run_operator(*args).await?,
        Command::Check {
            health_url,
            ready_within,
            namespace,
        } => {
            let client = kube::Client::try_default()
                .await
                .context("no Kubernetes configuration")?;
            let passed = edge_operator::controller::runtime::check::check_installation(
                client,
                &health_url,
                ready_within.into(),
                &namespace,
            )
            .await?;
            for passed in passed {
                println!("ok: {passed}");
            }
        }
        Command::Crds { dir } => {
            for crd in edge_operator::crd::all() {
                let yaml = edge_operator::crd::to_yaml(&crd)?;
                if dir.is_empty() {
                    print!("{yaml}");
                }
                for dir in &dir {
                    let path = dir.join(edge_operator::crd::file_name(&crd));
                    std::fs::write(&path, &yaml).with_context(|| format!("writing {}", path.display()))?;
                }
            }
        }
    }
    Ok(())
}
