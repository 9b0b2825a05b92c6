//! `edgectl`'s commands: each parsed command line becomes platform calls and printed
//! answers.

use std::time::Duration;

use chrono::Utc;
use clap::CommandFactory;

use super::access_lists::{self, SetRequest};
use super::args::{
    AccessListsCommand, AppCommand, CertCommand, Cli, Command, Connection, EventsCommand, ExportCommand, Output,
    PlanArgs, RolloutCommand, SearchArgs, SetArgs, ZoneListCommand,
};
use super::parse::{parse_action, parse_dimensions, parse_filter, parse_time};
use super::{CommandError, certificates, doctor, logs, plan, render, rollout, show, since};
use crate::api::models::shield::{EventLogsSearchRequest, ListSelector};
use crate::api::{ClientConfig, Credentials, EdgeClient, PlainHttp, SecretValue};
use crate::controller::kinds::access_list::export;

/// A client of the platform at `--api-url` (and `--logging-url`, by default the same)
/// with `credentials`; a missing API URL is reported before missing credentials.
fn connect(
    connection: &Connection,
    credentials: Result<Option<Credentials>, CommandError>,
) -> Result<EdgeClient, CommandError> {
    let api_url = connection
        .api_url
        .clone()
        .ok_or_else(|| CommandError::usage("the API URL is missing: pass --api-url or set EDGE_API_URL"))?;
    let credentials = credentials?;
    let logging_url = connection.logging_url.clone().unwrap_or_else(|| api_url.clone());
    let mut config = ClientConfig::without_credentials(api_url, logging_url);
    config.credentials = credentials;
    config.timeout = connection.timeout.into();
    config.plain_http = PlainHttp::allowing_in_cluster(connection.allow_http_in_cluster);
    connection
        .transport
        .apply(&mut config.transport)
        .map_err(CommandError::usage)?;
    Ok(EdgeClient::new(config)?)
}

/// A secret from `file` (trimmed), else from the environment variable `env`; never
/// from an argument (`flag`), which process lists show.
fn secret_input(
    argument: Option<&String>,
    flag: &str,
    file: Option<&std::path::Path>,
    env: &str,
) -> Result<Option<String>, CommandError> {
    if argument.is_some() {
        return Err(CommandError::usage(format!(
            "--{flag} is refused: a secret on the command line shows in process lists; set {env} or pass --{flag}-file"
        )));
    }
    match file {
        Some(path) => std::fs::read_to_string(path)
            .map(|text| Some(text.trim().to_string()))
            .map_err(|e| CommandError::usage(format!("--{flag}-file {}: {e}", path.display()))),
        None => Ok(std::env::var(env).ok().filter(|value| !value.is_empty())),
    }
}

impl Connection {
    fn access_key(&self) -> Result<Option<String>, CommandError> {
        secret_input(
            self.access_key.as_ref(),
            "access-key",
            self.access_key_file.as_deref(),
            "EDGE_ACCESS_KEY",
        )
    }

    fn bearer_token(&self) -> Result<Option<String>, CommandError> {
        secret_input(
            self.bearer_token.as_ref(),
            "bearer-token",
            self.bearer_token_file.as_deref(),
            "EDGE_BEARER_TOKEN",
        )
    }
}

/// A client for `edgectl plan`: the access key is optional (Secrets may come from
/// `--secrets-from`).
fn plan_client(connection: &Connection) -> Result<(EdgeClient, bool), CommandError> {
    // Refuses a token given as an argument, though `plan` has no use for one.
    connection.bearer_token()?;
    let key = connection
        .access_key()?
        .map(|key| Credentials::AccessKey(SecretValue::new(key)));
    let has_key = key.is_some();
    Ok((connect(connection, Ok(key))?, has_key))
}

async fn run_plan(args: &PlanArgs, connection: &Connection, output: Output) -> Result<u8, CommandError> {
    let manifests = plan::load(&args.filenames, || std::io::read_to_string(std::io::stdin()))?;
    let problems: Vec<plan::Problem> = manifests.iter().flat_map(plan::validate).collect();
    if !problems.is_empty() {
        show(output, &serde_json::json!({ "problems": problems }), |_| {
            render::problems(&problems)
        });
        return Ok(1);
    }
    let secrets = match &args.secrets_from {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CommandError::usage(format!("--secrets-from {}: {e}", path.display())))?;
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
    show(output, &planned, |planned| render::plan(planned));
    Ok(plan::exit_code(&planned))
}

/// The logging API takes a bearer token where given; everything else the access key.
fn client(connection: &Connection, logging: bool) -> Result<EdgeClient, CommandError> {
    let bearer = connection.bearer_token()?.filter(|_| logging);
    let credentials = match (bearer, connection.access_key()?) {
        (Some(token), _) => Ok(Credentials::Bearer(SecretValue::new(token))),
        (None, Some(key)) => Ok(Credentials::AccessKey(SecretValue::new(key))),
        (None, None) if logging => Err(CommandError::usage(
            "credentials are missing: set EDGE_ACCESS_KEY or EDGE_BEARER_TOKEN (or pass --access-key-file or \
             --bearer-token-file)",
        )),
        (None, None) => Err(CommandError::usage(
            "the access key is missing: set EDGE_ACCESS_KEY or pass --access-key-file",
        )),
    };
    connect(connection, credentials.map(Some))
}

fn search_request(args: &SearchArgs) -> Result<EventLogsSearchRequest, CommandError> {
    let (from, to) = match (&args.from, &args.to) {
        (Some(from), Some(to)) => (
            parse_time(from).map_err(CommandError::usage)?,
            parse_time(to).map_err(CommandError::usage)?,
        ),
        _ => {
            let now = Utc::now();
            let window = args.since.map_or(Duration::from_secs(3600), Into::into);
            (since(now, window)?, now)
        }
    };
    let mut request = EventLogsSearchRequest::window(from.timestamp_millis(), to.timestamp_millis())
        .page(args.page)
        .page_size(args.page_size);
    if let Some(query) = &args.query {
        request = request.query(query.clone());
    }
    for spec in &args.filters {
        request = request.filter(parse_filter(spec).map_err(CommandError::usage)?);
    }
    if let Some(group_by) = &args.group_by {
        request = request.group_by(parse_dimensions(group_by).map_err(CommandError::usage)?);
    }
    if let Some(buckets) = args.buckets {
        request = request.buckets(buckets);
    }
    Ok(request)
}

fn set_request(args: &SetArgs) -> Result<SetRequest, CommandError> {
    let selector = match (&args.configuration, &args.name) {
        (Some(id), _) => ListSelector::Configuration(*id),
        (None, Some(name)) => ListSelector::Name(name.clone()),
        (None, None) => return Err(CommandError::usage("pass --configuration or --name")),
    };
    Ok(SetRequest {
        zone: args.zone,
        selector,
        enabled: args.enabled,
        action: args
            .action
            .as_deref()
            .map(parse_action)
            .transpose()
            .map_err(CommandError::usage)?,
        dry_run: args.dry_run,
    })
}

/// Runs a parsed command line; the exit code on success.
pub async fn run(cli: Cli) -> Result<u8, CommandError> {
    let platform = || client(&cli.connection, false);
    let output = cli.output;
    match &cli.command {
        Command::Plan(args) => return run_plan(args, &cli.connection, cli.output).await,
        Command::Events(EventsCommand::Search(args)) => {
            let request = search_request(args)?;
            let response = platform()?.search_events(args.zone, &request).await?;
            show(output, &response, |response| render::search(response, &request));
        }
        Command::RateLimits(ZoneListCommand::List { zone }) => {
            let rules = platform()?.all_rate_limits(*zone).await?;
            show(output, &rules, |rules| render::rate_limits(rules));
        }
        Command::AccessLists(AccessListsCommand::List { zone }) => {
            let lists = platform()?.access_lists(*zone).await?;
            show(output, &lists, render::access_lists);
        }
        Command::AccessLists(AccessListsCommand::Set(args)) => {
            let change = access_lists::set(&platform()?, &set_request(args)?).await?;
            show(output, &change, render::access_list_change);
        }
        Command::Cert(CertCommand::Complete { hostname }) => {
            let result = platform()?.complete_external_http_certificate(hostname).await;
            let outcome = certificates::outcome(hostname, &result);
            if output != Output::Table || outcome.issued {
                show(output, &outcome, render::certificate);
            }
            if !outcome.issued {
                return Err(CommandError::Refused(
                    render::certificate(&outcome).trim_end().to_string(),
                ));
            }
        }
        Command::App(AppCommand::Get { id }) => {
            let app = platform()?.get_app(id).await?;
            show(output, &app, render::app);
        }
        Command::Logs(args) => logs::logs(&client(&cli.connection, true)?, args, output).await?,
        Command::Doctor(args) => {
            let checks = doctor::examine(&platform()?, &client(&cli.connection, true)?, args).await;
            show(output, &checks, |checks| doctor::render(checks));
            return Ok(doctor::exit_code(&checks));
        }
        Command::Rollout(RolloutCommand::Status(args)) => {
            let view = rollout::status(args).await?;
            show(output, &view, rollout::render);
        }
        Command::Rollout(RolloutCommand::Promote(args)) => print!("{}", rollout::promote(args).await?),
        Command::Export(ExportCommand::AccessLists {
            zone,
            manage,
            namespace,
        }) => {
            let lists = platform()?.access_lists(*zone).await?;
            let objects = export::export_access_lists(*zone, &lists, *manage, namespace.as_deref());
            let yaml = export::to_yaml_stream(*zone, &objects)
                .map_err(|e| CommandError::Refused(format!("cannot write YAML: {e}")))?;
            print!("{yaml}");
        }
        Command::Completion { shell } => {
            clap_complete::generate(*shell, &mut Cli::command(), "edgectl", &mut std::io::stdout());
        }
    }
    Ok(0)
}
