//! `edge-sim`: an offline emulator of the Edge Platform API.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use edge_operator::api::{SecretFile, Transport, TransportFlags};
use edge_operator::sim::recording::{parity, proxy};
use edge_operator::sim::{AdminAccess, ServerTls, Sim, SimDocument, serve, state_file};

const DEMO_FIXTURES: &str = include_str!("../../examples/edge-sim-fixtures.yaml");

/// An offline emulator of the whole Edge Platform API (Shield, Pull Zones, container
/// apps, CDN logging), with an admin API under /_sim for seeding, clock, faults and
/// the request journal. Without a subcommand it serves.
#[derive(Debug, Parser)]
#[command(name = "edge-sim", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
    /// Log format.
    #[arg(long, value_enum, default_value = "text", global = true)]
    log_format: edge_operator::telemetry::LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Record a real account: a proxy that forwards only reads to the platform, keeps
    /// each exchange without credentials and rebuilds the account as fixtures.
    Record(Box<RecordArgs>),
    /// Replay a recording against edge-sim and report where its answers differ; exit
    /// status 1 when any does.
    Parity(ParityArgs),
}

#[derive(Debug, clap::Args)]
struct RecordArgs {
    /// Base URL of the platform API to record.
    #[arg(long)]
    upstream: reqwest::Url,
    /// Base URL of the logging API [default: --upstream].
    #[arg(long)]
    logging_upstream: Option<reqwest::Url>,
    /// File holding the account's access key, added to every forwarded request.
    #[arg(long)]
    key_file: PathBuf,
    /// Folder to record into (created; it must not hold a recording).
    #[arg(long)]
    out: PathBuf,
    /// Address the recorder listens on; point clients at it.
    #[arg(long, default_value = "127.0.0.1:8081")]
    listen: SocketAddr,
    #[command(flatten)]
    transport: TransportFlags,
}

#[derive(Debug, clap::Args)]
struct ParityArgs {
    /// Folder of a recording (`edge-sim record --out`).
    recording: PathBuf,
    /// Report format.
    #[arg(long, value_enum, default_value = "text")]
    format: ReportFormat,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ReportFormat {
    Text,
    Markdown,
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
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
    /// File that keeps the document (fixtures with every change, and the clock): loaded
    /// at start in place of --fixtures when it exists, written after changes and at
    /// shutdown. Events and log entries are not kept.
    #[arg(long, env = "EDGE_SIM_STATE_FILE")]
    state_file: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<std::process::ExitCode> {
    let cli = Cli::parse();
    edge_operator::telemetry::init(cli.log_format);
    match cli.command {
        None => serve_emulator(cli.serve).await,
        Some(Command::Record(args)) => record(*args).await,
        Some(Command::Parity(args)) => check_parity(args).await,
    }
}

async fn record(args: RecordArgs) -> anyhow::Result<std::process::ExitCode> {
    let mut transport = Transport::default();
    args.transport.apply(&mut transport).map_err(anyhow::Error::msg)?;
    let recorder = proxy::Recorder {
        logging_upstream: args.logging_upstream.unwrap_or_else(|| args.upstream.clone()),
        upstream: args.upstream,
        key: SecretFile::open(args.key_file, "access key").map_err(anyhow::Error::msg)?,
        out: args.out,
        transport,
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    tracing::info!(listen = %listener.local_addr()?, out = %recorder.out.display(), "edge-sim record ready");
    proxy::record(recorder, listener, edge_operator::signal::terminate_or_interrupt()).await?;
    Ok(std::process::ExitCode::SUCCESS)
}

async fn check_parity(args: ParityArgs) -> anyhow::Result<std::process::ExitCode> {
    let report = parity::replay(&args.recording).await?;
    match args.format {
        ReportFormat::Text => print!("{}", report.text()),
        ReportFormat::Markdown => print!("{}", report.markdown()),
    }
    Ok(if report.differs() {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    })
}

async fn serve_emulator(args: ServeArgs) -> anyhow::Result<std::process::ExitCode> {
    let restored = match &args.state_file {
        Some(path) => state_file::load(path).map_err(anyhow::Error::msg)?,
        None => None,
    };
    let document = match (restored, &args.fixtures) {
        (Some(document), _) => {
            tracing::info!(state_file = ?args.state_file, "state restored");
            document
        }
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            SimDocument::from_yaml(&text).with_context(|| format!("invalid fixtures {}", path.display()))?
        }
        (None, None) => SimDocument::from_yaml(DEMO_FIXTURES).context("built-in demo fixtures")?,
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
    let (stopping, mut stopped) = tokio::sync::watch::channel(false);
    let state_writer = args.state_file.map(|path| {
        tokio::spawn(state_file::keep_written(sim.clone(), path, async move {
            let _ = stopped.wait_for(|stopped| *stopped).await;
        }))
    });
    let served = serve(
        listener,
        sim,
        admin,
        tls,
        edge_operator::signal::terminate_or_interrupt(),
    )
    .await;
    let _ = stopping.send(true);
    if let Some(writer) = state_writer {
        writer.await?;
    }
    served?;
    Ok(std::process::ExitCode::SUCCESS)
}
