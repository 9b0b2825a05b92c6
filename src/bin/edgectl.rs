//! `edgectl`: a command-line client of the Edge Platform API.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand, ValueEnum};
use edge_operator::api::models::logging::{LogEntry, SortOrder};
use edge_operator::api::models::shield::{EventLogsSearchRequest, ListSelector};
use edge_operator::api::{ClientConfig, Credentials, EdgeClient, LogQuery, Secret};
use edge_operator::cli::access_lists::{self, SetRequest};
use edge_operator::cli::logs::DayFilter;
use edge_operator::cli::parse::{parse_action, parse_day, parse_dimensions, parse_filter, parse_time};
use edge_operator::cli::{Failure, certificates, plan, render};
use futures::{StreamExt, TryStreamExt};

/// Command-line client of the Edge Platform API: Shield event search, access lists,
/// rate limits, container apps and CDN request logs.
#[derive(Debug, Parser)]
#[command(name = "edgectl", version, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    connection: Connection,
    /// Output format: human tables, or JSON for scripts.
    #[arg(short = 'o', long, global = true, value_enum, default_value = "table")]
    output: Output,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct Connection {
    /// Base URL of the platform API (e.g. http://127.0.0.1:8080 for edge-sim).
    #[arg(long, env = "EDGE_API_URL", global = true)]
    api_url: Option<String>,
    /// Base URL of the logging API [default: the API URL].
    #[arg(long, env = "EDGE_LOGGING_URL", global = true)]
    logging_url: Option<String>,
    /// Access key sent as the AccessKey header.
    #[arg(long, env = "EDGE_ACCESS_KEY", global = true, hide_env_values = true)]
    access_key: Option<String>,
    /// Bearer token (JWT) for the logging API; used by `logs` instead of the access key.
    #[arg(long, env = "EDGE_BEARER_TOKEN", global = true, hide_env_values = true)]
    bearer_token: Option<String>,
    /// Timeout of each request.
    #[arg(long, global = true, default_value = "30s")]
    timeout: humantime::Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Table,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
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
}

#[derive(Debug, Args)]
struct PlanArgs {
    /// Manifest files or folders (read recursively), or `-` for a multi-document stream
    /// on standard input (e.g. `kustomize build | edgectl plan -f -`). Repeatable.
    #[arg(short = 'f', long = "filename", required = true)]
    filenames: Vec<String>,
    /// A YAML stream of the Secrets that manifests reference (their keys are never printed).
    #[arg(long)]
    secrets_from: Option<PathBuf>,
    /// Namespace of manifests that name none.
    #[arg(long, default_value = "default")]
    namespace: String,
}

#[derive(Debug, Subcommand)]
enum ExportCommand {
    /// One AccessListConfig per access list of a Shield Zone, holding its current values.
    AccessLists {
        /// Shield Zone id.
        #[arg(long)]
        zone: i64,
        /// managementPolicy Manage instead of Observe (the operator then corrects drift).
        #[arg(long)]
        manage: bool,
        /// metadata.namespace of the objects (none: the namespace `kubectl apply` uses).
        #[arg(long)]
        namespace: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum EventsCommand {
    /// Search the event log of a Shield Zone, flat or grouped.
    Search(SearchArgs),
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// Shield Zone id.
    #[arg(long)]
    zone: i64,
    /// Search the window ending now and starting this long ago (e.g. 15m, 1h, 2d).
    #[arg(long, conflicts_with_all = ["from", "to"])]
    since: Option<humantime::Duration>,
    /// Window start: RFC 3339 or Unix milliseconds.
    #[arg(long, requires = "to")]
    from: Option<String>,
    /// Window end (exclusive): RFC 3339 or Unix milliseconds.
    #[arg(long, requires = "from")]
    to: Option<String>,
    /// Free text: every word must appear in the IP, rule id, URL, user agent or rule name.
    #[arg(long)]
    query: Option<String>,
    /// Filter `field:op:value[,value...]`; ops eq, in, contains, cidr (ip), wildcard. Repeatable.
    #[arg(long = "filter")]
    filters: Vec<String>,
    /// Group by these dimensions, comma-separated (feature, ruleId, ip, ja4, ua, url, asn, country, action).
    #[arg(long)]
    group_by: Option<String>,
    /// Sparkline buckets per group (grouped searches).
    #[arg(long)]
    buckets: Option<i32>,
    /// Zero-based page.
    #[arg(long, default_value_t = 0)]
    page: i32,
    /// Rows or groups per page (1-500).
    #[arg(long, default_value_t = 50)]
    page_size: i32,
}

#[derive(Debug, Subcommand)]
enum ZoneListCommand {
    /// List them (every page).
    List {
        /// Shield Zone id.
        #[arg(long)]
        zone: i64,
    },
}

#[derive(Debug, Subcommand)]
enum AccessListsCommand {
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
struct SetArgs {
    /// Shield Zone id.
    #[arg(long)]
    zone: i64,
    /// The list's configuration id (the `CONFIGURATION` column of `list`).
    #[arg(long, required_unless_present = "name", conflicts_with = "name")]
    configuration: Option<i64>,
    /// The list's exact name; must name exactly one list of the zone.
    #[arg(long)]
    name: Option<String>,
    /// Enable (true) or disable (false) the list.
    #[arg(long)]
    enabled: Option<bool>,
    /// Action: None, Allow, Block, Challenge, Log, Bypass (or 0 to 5).
    #[arg(long)]
    action: Option<String>,
    /// Show what would change without changing it.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Subcommand)]
enum CertCommand {
    /// Complete the external HTTP certificate of a hostname (exit 0 once issued).
    Complete {
        /// A hostname of one of the account's Pull Zones.
        #[arg(long)]
        hostname: String,
    },
}

#[derive(Debug, Subcommand)]
enum AppCommand {
    /// Show one application.
    Get {
        /// Application id.
        id: String,
    },
}

#[derive(Debug, Args)]
struct LogsArgs {
    /// Pull Zone id.
    #[arg(long)]
    pull_zone: i64,
    /// Entries of the last this long (e.g. 30m, 6h) [default: the platform's, 24h].
    #[arg(long, conflicts_with = "day")]
    since: Option<humantime::Duration>,
    /// Read the legacy v1 file of this UTC day (MM-dd-yy) instead of the v2 API.
    #[arg(long, conflicts_with = "follow")]
    day: Option<String>,
    /// Status codes or classes, comma-separated (e.g. 5xx,404).
    #[arg(long)]
    status: Option<String>,
    /// Cache statuses, comma-separated (HIT, MISS, BYPASS, REVALIDATED, STALE, UPDATING, -).
    #[arg(long)]
    cache_status: Option<String>,
    /// Free-text search.
    #[arg(long)]
    search: Option<String>,
    /// At most this many entries (all pages are followed).
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// Keep polling for new entries until interrupted.
    #[arg(long)]
    follow: bool,
    /// Poll interval of --follow.
    #[arg(long, default_value = "5s")]
    interval: humantime::Duration,
}

fn usage(message: impl Into<String>) -> Failure {
    Failure::Usage(message.into())
}

/// A client for `edgectl plan`: the access key is optional (Secrets may come from
/// `--secrets-from`).
fn plan_client(connection: &Connection) -> Result<(EdgeClient, bool), Failure> {
    let api_url = connection
        .api_url
        .clone()
        .ok_or_else(|| usage("the API URL is missing: pass --api-url or set EDGE_API_URL"))?;
    let key = connection.access_key.clone();
    let has_key = key.is_some();
    let logging_url = connection.logging_url.clone().unwrap_or_else(|| api_url.clone());
    let mut config = ClientConfig::new(
        api_url,
        logging_url,
        Credentials::AccessKey(Secret::new(key.unwrap_or_default())),
    );
    config.timeout = connection.timeout.into();
    Ok((EdgeClient::new(config)?, has_key))
}

async fn run_plan(args: &PlanArgs, connection: &Connection, output: Output) -> Result<u8, Failure> {
    let manifests = plan::load(&args.filenames, || std::io::read_to_string(std::io::stdin()))?;
    let problems: Vec<plan::Problem> = manifests.iter().flat_map(plan::validate).collect();
    if !problems.is_empty() {
        match output {
            Output::Json => print_json(&serde_json::json!({ "problems": problems })),
            Output::Table => print!("{}", render::problems(&problems)),
        }
        return Ok(1);
    }
    let secrets = match &args.secrets_from {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| usage(format!("--secrets-from {}: {e}", path.display())))?;
            plan::secrets_from(&text, &args.namespace)?
        }
        None => Default::default(),
    };
    let (base, has_default_key) = plan_client(connection)?;
    let clients = plan::Clients {
        base,
        has_default_key,
        secrets,
    };
    let planned = plan::plan(&manifests, &clients, &args.namespace).await;
    match output {
        Output::Json => print_json(&planned),
        Output::Table => print!("{}", render::plan(&planned)),
    }
    Ok(plan::exit_code(&planned))
}

/// The logging API takes a bearer token where given; everything else the access key.
fn client(connection: &Connection, logging: bool) -> Result<EdgeClient, Failure> {
    let api_url = connection
        .api_url
        .clone()
        .ok_or_else(|| usage("the API URL is missing: pass --api-url or set EDGE_API_URL"))?;
    let bearer = connection.bearer_token.clone().filter(|_| logging);
    let credentials = match (bearer, connection.access_key.clone()) {
        (Some(token), _) => Credentials::Bearer(Secret::new(token)),
        (None, Some(key)) => Credentials::AccessKey(Secret::new(key)),
        (None, None) if logging => {
            return Err(usage(
                "credentials are missing: pass --access-key or --bearer-token (or set EDGE_ACCESS_KEY or EDGE_BEARER_TOKEN)",
            ));
        }
        (None, None) => {
            return Err(usage(
                "the access key is missing: pass --access-key or set EDGE_ACCESS_KEY",
            ));
        }
    };
    let logging_url = connection.logging_url.clone().unwrap_or_else(|| api_url.clone());
    let mut config = ClientConfig::new(api_url, logging_url, credentials);
    config.timeout = connection.timeout.into();
    Ok(EdgeClient::new(config)?)
}

fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(error) => eprintln!("edgectl: cannot encode the answer: {error}"),
    }
}

fn search_request(args: &SearchArgs) -> Result<EventLogsSearchRequest, Failure> {
    let (from, to) = match (&args.from, &args.to) {
        (Some(from), Some(to)) => (parse_time(from).map_err(usage)?, parse_time(to).map_err(usage)?),
        _ => {
            let since: Duration = args.since.map_or(Duration::from_secs(3600), Into::into);
            let now = Utc::now();
            let since = chrono::Duration::from_std(since).map_err(|_| usage("--since is too long"))?;
            (now - since, now)
        }
    };
    let mut request = EventLogsSearchRequest::window(from.timestamp_millis(), to.timestamp_millis())
        .page(args.page)
        .page_size(args.page_size);
    if let Some(query) = &args.query {
        request = request.query(query.clone());
    }
    for spec in &args.filters {
        request = request.filter(parse_filter(spec).map_err(usage)?);
    }
    if let Some(group_by) = &args.group_by {
        request = request.group_by(parse_dimensions(group_by).map_err(usage)?);
    }
    if let Some(buckets) = args.buckets {
        request = request.buckets(buckets);
    }
    Ok(request)
}

fn set_request(args: &SetArgs) -> Result<SetRequest, Failure> {
    let selector = match (&args.configuration, &args.name) {
        (Some(id), _) => ListSelector::Configuration(*id),
        (None, Some(name)) => ListSelector::Name(name.clone()),
        (None, None) => return Err(usage("pass --configuration or --name")),
    };
    Ok(SetRequest {
        zone: args.zone,
        selector,
        enabled: args.enabled,
        action: args.action.as_deref().map(parse_action).transpose().map_err(usage)?,
        dry_run: args.dry_run,
    })
}

fn split_list(list: &Option<String>) -> Vec<String> {
    list.iter()
        .flat_map(|l| l.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn print_entries(entries: &[LogEntry], output: Output, with_header: bool) {
    match output {
        Output::Json => entries.iter().for_each(print_json),
        Output::Table => print!("{}", render::logs(entries, with_header)),
    }
}

async fn day_file(client: &EdgeClient, args: &LogsArgs, day: &str, output: Output) -> Result<(), Failure> {
    let day = parse_day(day).map_err(usage)?;
    let filter = DayFilter::new(
        &split_list(&args.status),
        &split_list(&args.cache_status),
        args.search.as_deref(),
    )
    .map_err(usage)?;
    let entries: Vec<LogEntry> = client
        .log_file(args.pull_zone, day)
        .await?
        .into_iter()
        .filter(|e| filter.matches(e))
        .take(args.limit)
        .collect();
    print_entries(&entries, output, true);
    Ok(())
}

async fn logs(client: &EdgeClient, args: &LogsArgs, output: Output) -> Result<(), Failure> {
    if let Some(day) = &args.day {
        return day_file(client, args, day, output).await;
    }
    let since = |duration: Duration| -> Result<DateTime<Utc>, Failure> {
        Ok(Utc::now() - chrono::Duration::from_std(duration).map_err(|_| usage("--since is too long"))?)
    };
    let mut query = LogQuery {
        from: args.since.map(|s| since(s.into())).transpose()?,
        status: split_list(&args.status),
        cache_status: split_list(&args.cache_status),
        search: args.search.clone(),
        limit: Some(args.limit.clamp(1, 1000) as u64),
        order: Some(if args.follow { SortOrder::Asc } else { SortOrder::Desc }),
        ..LogQuery::default()
    };
    let mut first = true;
    loop {
        let entries: Vec<LogEntry> = client
            .logs(args.pull_zone, query.clone())
            .take(args.limit)
            .try_collect()
            .await?;
        print_entries(&entries, output, first);
        if !args.follow {
            return Ok(());
        }
        first = false;
        if let Some(last) = entries.last() {
            query.from = Some(last.timestamp + chrono::Duration::milliseconds(1));
        }
        tokio::time::sleep(args.interval.into()).await;
    }
}

async fn run(cli: Cli) -> Result<u8, Failure> {
    if let Command::Plan(args) = &cli.command {
        return run_plan(args, &cli.connection, cli.output).await;
    }
    let client = client(&cli.connection, matches!(cli.command, Command::Logs(_)))?;
    let json = cli.output == Output::Json;
    match &cli.command {
        Command::Events(EventsCommand::Search(args)) => {
            let request = search_request(args)?;
            let response = client.search_events(args.zone, &request).await?;
            if json {
                print_json(&response);
            } else {
                print!("{}", render::search(&response, &request));
            }
        }
        Command::RateLimits(ZoneListCommand::List { zone }) => {
            let rules = client.all_rate_limits(*zone).await?;
            if json {
                print_json(&rules);
            } else {
                print!("{}", render::rate_limits(&rules));
            }
        }
        Command::AccessLists(AccessListsCommand::List { zone }) => {
            let lists = client.access_lists(*zone).await?;
            if json {
                print_json(&lists);
            } else {
                print!("{}", render::access_lists(&lists));
            }
        }
        Command::AccessLists(AccessListsCommand::Set(args)) => {
            let change = access_lists::set(&client, &set_request(args)?).await?;
            if json {
                print_json(&change);
            } else {
                print!("{}", render::access_list_change(&change));
            }
        }
        Command::Cert(CertCommand::Complete { hostname }) => {
            let result = client.complete_external_http_certificate(hostname).await;
            let outcome = certificates::outcome(hostname, &result);
            if json {
                print_json(&outcome);
            } else if outcome.issued {
                print!("{}", render::certificate(&outcome));
            }
            if !outcome.issued {
                return Err(Failure::Refused(render::certificate(&outcome).trim_end().to_string()));
            }
        }
        Command::App(AppCommand::Get { id }) => {
            let app = client.get_app(id).await?;
            if json {
                print_json(&app);
            } else {
                print!("{}", render::app(&app));
            }
        }
        Command::Logs(args) => logs(&client, args, cli.output).await?,
        Command::Export(ExportCommand::AccessLists {
            zone,
            manage,
            namespace,
        }) => {
            let lists = client.access_lists(*zone).await?;
            let objects = plan::export_access_lists(*zone, &lists, *manage, namespace.as_deref());
            let yaml = plan::to_yaml_stream(*zone, &objects)
                .map_err(|e| Failure::Refused(format!("cannot write YAML: {e}")))?;
            print!("{yaml}");
        }
        Command::Plan(_) => {}
    }
    Ok(0)
}

#[tokio::main]
async fn main() -> ExitCode {
    // Every error exits 1, bad usage included: 2 is `plan`'s "something would change".
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(u8::from(error.use_stderr()));
        }
    };
    match run(cli).await {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("edgectl: {failure}");
            ExitCode::FAILURE
        }
    }
}
