//! `edge-sim`: an offline emulator of the Edge Platform API.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use edge_operator::api::SecretFile;
use edge_operator::sim::{AdminAccess, ServerTls, Sim, SimDocument, serve};

const DEMO_FIXTURES: &str = include_str!("../../examples/edge-sim-fixtures.yaml");

/// An offline emulator of the whole Edge Platform API (Shield, Pull Zones, container
/// apps, CDN logging), with an admin API under /_sim for seeding, clock, faults and
/// the request journal.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Address to listen on (platform API, logging API and admin API share it).
    #[arg(long, env = "EDGE_SIM_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Fixtures document (YAML) to start with; the built-in demo document when absent.
    #[arg(long, env = "EDGE_SIM_FIXTURES")]
    fixtures: Option<PathBuf>,
    /// Generate this many security events, spread over the fixtures' Shield Zones.
    #[arg(long, default_value_t = 0)]
    generate_events: usize,
    /// Generate this many CDN log entries, spread over Pull Zones with logging enabled.
    #[arg(long, default_value_t = 0)]
    generate_logs: usize,
    /// File holding the admin API's token (read again when it changes). Without it the
    /// admin API is open to every client that reaches the address.
    #[arg(long, env = "EDGE_SIM_ADMIN_TOKEN_FILE")]
    admin_token_file: Option<PathBuf>,
    /// PEM certificate chain (leaf first) to serve https with, every API on the one
    /// address; with --tls-key.
    #[arg(long, env = "EDGE_SIM_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "EDGE_SIM_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Seed of the generated data: the same seed gives the same data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    log_format: edge_operator::telemetry::LogFormat,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    edge_operator::telemetry::init(args.log_format);
    let document = match &args.fixtures {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            SimDocument::from_yaml(&text).with_context(|| format!("invalid fixtures {}", path.display()))?
        }
        None => SimDocument::from_yaml(DEMO_FIXTURES).context("built-in demo fixtures")?,
    };
    let admin = match args.admin_token_file {
        Some(path) => AdminAccess::Token(SecretFile::open(path, "admin token").map_err(anyhow::Error::msg)?),
        None => {
            if !args.listen.ip().is_loopback() {
                tracing::warn!(listen = %args.listen, "the admin API is open to every client that reaches this address; pass --admin-token-file");
            }
            AdminAccess::Open
        }
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(ServerTls::from_files(cert, key).map_err(anyhow::Error::msg)?),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let sim = Sim::new(document);
    let generated = sim.generate(args.generate_events, args.generate_logs, args.seed)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    tracing::info!(
        listen = %listener.local_addr()?,
        scheme,
        events = generated.events,
        logs = generated.logs,
        "edge-sim ready"
    );
    serve(
        listener,
        sim,
        admin,
        tls,
        edge_operator::signal::terminate_or_interrupt(),
    )
    .await?;
    Ok(())
}
