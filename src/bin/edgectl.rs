//! `edgectl`: a command-line client of the Edge Platform API.

use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand, ValueEnum};
use edge_operator::api::models::logging::{LogEntry, SortOrder};
use edge_operator::api::models::shield::{
    AccessListAction, EventLogsSearchRequest, EventLogsSearchResponse, access_list_type_name, rate_limit_action_name,
};
use edge_operator::api::{ApiError, ClientConfig, Credentials, EdgeClient, LogQuery, Secret};
use edge_operator::cli::{format_millis, parse_dimensions, parse_filter, parse_time, sparkline, table};
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
    AccessLists(ZoneListCommand),
    /// Container applications.
    #[command(subcommand)]
    App(AppCommand),
    /// CDN request logs of a Pull Zone.
    Logs(LogsArgs),
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
    #[arg(long)]
    since: Option<humantime::Duration>,
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

/// A failure: bad input (exit 2) or a failed platform call (exit 1).
enum Failure {
    Usage(String),
    Api(ApiError),
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::InvalidInput(message) => Failure::Usage(message),
            other => Failure::Api(other),
        }
    }
}

fn usage(message: impl Into<String>) -> Failure {
    Failure::Usage(message.into())
}

fn client(connection: &Connection) -> Result<EdgeClient, Failure> {
    let api_url = connection
        .api_url
        .clone()
        .ok_or_else(|| usage("the API URL is missing: pass --api-url or set EDGE_API_URL"))?;
    let key = connection
        .access_key
        .clone()
        .ok_or_else(|| usage("the access key is missing: pass --access-key or set EDGE_ACCESS_KEY"))?;
    let logging_url = connection.logging_url.clone().unwrap_or_else(|| api_url.clone());
    let mut config = ClientConfig::new(api_url, logging_url, Credentials::AccessKey(Secret::new(key)));
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

fn render_search(response: &EventLogsSearchResponse, request: &EventLogsSearchRequest) -> String {
    let pages = format!("page {} of {}", response.page + 1, response.total_pages.max(1));
    if let Some(groups) = &response.groups {
        let dimensions: Vec<String> = request
            .group_by
            .iter()
            .flatten()
            .map(|d| d.as_str().to_string())
            .collect();
        let mut header: Vec<String> = dimensions.iter().map(|d| d.to_uppercase()).collect();
        header.extend(
            [
                "COUNT",
                "BLOCKED",
                "CHALLENGED",
                "LOGGED",
                "FIRST SEEN",
                "LAST SEEN",
                "ACTIVITY",
            ]
            .map(String::from),
        );
        let rows: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                let key = g.key.clone().unwrap_or_default();
                let context = g.context.clone().unwrap_or_default();
                let mut row: Vec<String> = dimensions
                    .iter()
                    .map(|d| key.get(d).cloned().unwrap_or_default())
                    .collect();
                row.extend([
                    g.count.to_string(),
                    context.blocked.to_string(),
                    context.challenged.to_string(),
                    context.logged.to_string(),
                    format_millis(g.first_seen),
                    format_millis(g.last_seen),
                    g.sparkline.as_deref().map(sparkline).unwrap_or_default(),
                ]);
                row
            })
            .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        return format!("{}{} groups, {pages}\n", table(&header, &rows), response.total);
    }
    let rows: Vec<Vec<String>> = response
        .rows
        .iter()
        .flatten()
        .map(|r| {
            let field = |name: &str| r.fields.as_ref().and_then(|f| f.get(name)).cloned().unwrap_or_default();
            vec![
                format_millis(r.timestamp),
                field("ip"),
                field("country"),
                field("action"),
                field("ruleId"),
                field("url"),
            ]
        })
        .collect();
    format!(
        "{}{} events, {pages}\n",
        table(&["TIME", "IP", "COUNTRY", "ACTION", "RULE", "URL"], &rows),
        response.total
    )
}

fn log_rows(entries: &[LogEntry]) -> Vec<Vec<String>> {
    entries
        .iter()
        .map(|e| {
            vec![
                e.timestamp.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                e.status_code.to_string(),
                e.cache_status.clone(),
                e.remote_ip.clone(),
                e.country_code.clone(),
                e.url.clone(),
            ]
        })
        .collect()
}

const LOG_HEADER: [&str; 6] = ["TIME", "STATUS", "CACHE", "IP", "COUNTRY", "URL"];

async fn logs(client: &EdgeClient, args: &LogsArgs, output: Output) -> Result<(), Failure> {
    let split = |list: &Option<String>| -> Vec<String> {
        list.iter()
            .flat_map(|l| l.split(','))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let since = |duration: Duration| -> Result<DateTime<Utc>, Failure> {
        Ok(Utc::now() - chrono::Duration::from_std(duration).map_err(|_| usage("--since is too long"))?)
    };
    let mut query = LogQuery {
        from: args.since.map(|s| since(s.into())).transpose()?,
        status: split(&args.status),
        cache_status: split(&args.cache_status),
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
        match output {
            Output::Json => entries.iter().for_each(print_json),
            Output::Table if first => print!("{}", table(&LOG_HEADER, &log_rows(&entries))),
            Output::Table => {
                let body = table(&LOG_HEADER, &log_rows(&entries));
                print!("{}", body.split_once('\n').map_or("", |(_, rows)| rows));
            }
        }
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

async fn run(cli: Cli) -> Result<(), Failure> {
    let client = client(&cli.connection)?;
    match &cli.command {
        Command::Events(EventsCommand::Search(args)) => {
            let request = search_request(args)?;
            let response = client.search_events(args.zone, &request).await?;
            match cli.output {
                Output::Json => print_json(&response),
                Output::Table => print!("{}", render_search(&response, &request)),
            }
        }
        Command::RateLimits(ZoneListCommand::List { zone }) => {
            let rules = client.all_rate_limits(*zone).await?;
            match cli.output {
                Output::Json => print_json(&rules),
                Output::Table => {
                    let seconds = |v: Option<i64>| v.map(|s| format!("{s}s")).unwrap_or_else(|| "-".into());
                    let rows: Vec<Vec<String>> = rules
                        .iter()
                        .map(|r| {
                            let c = &r.rule_configuration;
                            vec![
                                r.id.to_string(),
                                r.rule_name.clone(),
                                rate_limit_action_name(c.action_type),
                                c.request_count.map_or_else(|| "-".into(), |n| n.to_string()),
                                seconds(c.timeframe),
                                seconds(c.block_time),
                            ]
                        })
                        .collect();
                    print!(
                        "{}",
                        table(&["ID", "NAME", "ACTION", "REQUESTS", "TIMEFRAME", "BLOCK TIME"], &rows)
                    );
                }
            }
        }
        Command::AccessLists(ZoneListCommand::List { zone }) => {
            let lists = client.access_lists(*zone).await?;
            match cli.output {
                Output::Json => print_json(&lists),
                Output::Table => {
                    let rows: Vec<Vec<String>> = lists
                        .lists_with_kind()
                        .map(|(l, managed)| {
                            let kind = if managed { "managed" } else { "custom" };
                            vec![
                                l.configuration_id.to_string(),
                                l.list_id.to_string(),
                                l.name.clone(),
                                kind.to_string(),
                                access_list_type_name(l.list_type),
                                l.is_enabled.to_string(),
                                AccessListAction::describe(l.action),
                                l.entry_count.to_string(),
                            ]
                        })
                        .collect();
                    print!(
                        "{}",
                        table(
                            &[
                                "CONFIGURATION",
                                "LIST",
                                "NAME",
                                "KIND",
                                "TYPE",
                                "ENABLED",
                                "ACTION",
                                "ENTRIES"
                            ],
                            &rows
                        )
                    );
                }
            }
        }
        Command::App(AppCommand::Get { id }) => {
            let app = client.get_app(id).await?;
            match cli.output {
                Output::Json => print_json(&app),
                Output::Table => {
                    let images: Vec<String> = app
                        .container_templates
                        .iter()
                        .map(|t| {
                            format!(
                                "{} ({}{})",
                                t.image,
                                t.image_tag,
                                if t.image_digest.is_empty() {
                                    String::new()
                                } else {
                                    format!(", {}", t.image_digest)
                                }
                            )
                        })
                        .collect();
                    let rows = vec![
                        vec!["ID".into(), app.id.clone()],
                        vec!["NAME".into(), app.name.clone()],
                        vec!["STATUS".into(), app.status.to_string()],
                        vec!["RUNTIME".into(), app.runtime_type.as_str().into()],
                        vec!["INSTANCES".into(), app.container_instances.len().to_string()],
                        vec!["REGIONS".into(), app.region_settings.allowed_region_ids.join(", ")],
                        vec!["ENDPOINTS".into(), app.public_hosts().join(", ")],
                        vec!["IMAGES".into(), images.join("; ")],
                        vec![
                            "AUTOSCALING".into(),
                            format!("{}..{}", app.auto_scaling.min, app.auto_scaling.max),
                        ],
                    ];
                    print!("{}", table(&["FIELD", "VALUE"], &rows));
                }
            }
        }
        Command::Logs(args) => logs(&client, args, cli.output).await?,
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("edgectl: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Api(error)) => {
            eprintln!("edgectl: {error}");
            ExitCode::FAILURE
        }
    }
}
