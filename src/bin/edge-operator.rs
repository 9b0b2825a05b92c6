//! `edge-operator`: the Kubernetes operator of the Edge Platform.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use edge_operator::controller::runtime::{RunConfig, run};

#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options (its `malloc_conf`): pages freed go back to the system at once
/// rather than over ten seconds, which kept about 4 MB more resident at 10,000 objects
/// (docs/benchmark.md, "Memory"). `_RJEM_MALLOC_CONF` in the environment overrides it.
#[cfg(feature = "jemalloc")]
#[unsafe(export_name = "_rjem_malloc_conf")]
static JEMALLOC_OPTIONS: &[u8; 34] = b"dirty_decay_ms:0,muzzy_decay_ms:0\0";

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
    Run(Box<RunConfig>),
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
        /// (repeatable: `make crds` writes `crds/`).
        #[arg(long)]
        dir: Vec<PathBuf>,
        /// Write the CRDs as Helm chart templates (rendered when `crds.enabled`) into
        /// this directory (`make crds`: `charts/edge-operator/templates/crds`).
        #[arg(long)]
        chart_templates: Option<PathBuf>,
        /// Write the chart's list of kinds (its `_kinds.tpl`) into this file (`make
        /// crds`: `charts/edge-operator/templates/_kinds.tpl`).
        #[arg(long)]
        chart_kinds: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Run(config) => {
            edge_operator::telemetry::init(config.log_format);
            run(*config).await?;
        }
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
        Command::Crds {
            dir,
            chart_templates,
            chart_kinds,
        } => {
            let write = |path: PathBuf, text: &str| {
                std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
            };
            for crd in edge_operator::controller::kinds::crds() {
                let yaml = edge_operator::resources::to_yaml(&crd)?;
                if dir.is_empty() && chart_templates.is_none() && chart_kinds.is_none() {
                    print!("{yaml}");
                }
                for dir in &dir {
                    write(dir.join(edge_operator::resources::file_name(&crd)), &yaml)?;
                }
                if let Some(templates) = &chart_templates {
                    let template = edge_operator::resources::to_chart_template(&crd)?;
                    write(templates.join(edge_operator::resources::file_name(&crd)), &template)?;
                }
            }
            if let Some(path) = chart_kinds {
                write(path, &edge_operator::controller::kinds::chart_kinds_template())?;
            }
        }
    }
    Ok(())
}
