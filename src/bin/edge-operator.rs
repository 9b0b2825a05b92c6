//! `edge-operator`: the Kubernetes operator of the Edge Platform.

use anyhow::Context;
use clap::{Parser, Subcommand};

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
    /// Print the CustomResourceDefinitions as YAML, or write one file per CRD.
    Crds {
        /// Write `<crd name>.yaml` files into this directory instead of printing.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Crds { dir } => {
            for crd in edge_operator::crd::all() {
                let yaml = edge_operator::crd::to_yaml(&crd)?;
                match &dir {
                    Some(dir) => {
                        let path = dir.join(edge_operator::crd::file_name(&crd));
                        std::fs::write(&path, yaml).with_context(|| format!("writing {}", path.display()))?;
                    }
                    None => print!("{yaml}"),
                }
            }
        }
    }
    Ok(())
}
