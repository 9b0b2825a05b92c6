//! The product's benchmark, printed as one table of figures, targets and verdicts; the
//! process exits non-zero when a gated figure fails.
//!
//! - search: edge-sim's event search beside DuckDB on the same events;
//! - operator: AccessListConfig convergence against its floor, platform calls and status
//!   writes per object, an idle period, operator memory at two sizes;
//! - rate discipline: ContainerAppWatches sharing one Pull Zone's logging quota, and
//!   many watches polling under the global platform quota;
//! - cdn: the summary of a Pull Zone logging 1,000,000 requests an hour;
//! - tenants: what one tenant's objects leave of the operator to another: reconcile
//!   turns, a Pull Zone's logging budget, memory.
//!
//! Run through `hack/bench/run.sh` (`make bench`), which provides DuckDB, the operator
//! binary and a local control plane. EDGE_BENCH_SCALE=smoke runs every suite small and
//! gates only the targets that hold at any scale (counts, identical results).

mod access_lists;
mod app_watches;
mod busy_pull_zone;
mod flood;
mod harness;
mod poll_quota;
mod report;
mod search;
mod tenants;

use std::process::ExitCode;
use std::str::FromStr;
use std::time::Duration;

use report::Report;

/// Sizes and durations of a run; each can be overridden by its environment variable.
pub struct Settings {
    pub smoke: bool,
    pub suites: Vec<String>,
    pub python: String,
    /// EDGE_BENCH_EVENTS, EDGE_BENCH_RUNS
    pub events: usize,
    pub runs: usize,
    /// EDGE_BENCH_OBJECTS, EDGE_BENCH_LARGE_OBJECTS (0: skip the large run)
    pub objects: usize,
    pub large_objects: Option<usize>,
    /// EDGE_BENCH_CONVERGENCE_DELAY: added to each platform PATCH of the operator's
    /// convergences (not the floors'): an operator that much slower, to check that the
    /// convergence gate catches it.
    pub convergence_delay: Duration,
    /// EDGE_BENCH_IDLE, EDGE_BENCH_RESYNC
    pub idle: Duration,
    pub resync: Duration,
    /// EDGE_BENCH_WATCHES, EDGE_BENCH_RATE_DURATION
    pub watches: usize,
    pub rate_duration: Duration,
    /// EDGE_BENCH_POLL_WATCHES, EDGE_BENCH_POLL_INTERVAL
    pub poll_watches: usize,
    pub poll_interval: Duration,
    /// EDGE_BENCH_BUSY_ZONES: the busy tenant's access lists in the write-line run
    /// (each on a zone of its own, read every 5 s, under a quota of a fifth of them
    /// per second)
    pub busy_zones: usize,
    /// EDGE_BENCH_CDN_PER_HOUR, EDGE_BENCH_CDN_WINDOW, EDGE_BENCH_CDN_POLLS (polls
    /// measured once the window is covered)
    pub cdn_per_hour: usize,
    pub cdn_window: Duration,
    pub cdn_steady_polls: usize,
    /// EDGE_BENCH_TENANT_OBJECTS: the busy tenant's access lists at the poll-interval
    /// floor in the reconcile-turns run (each on a zone of its own)
    pub tenant_objects: usize,
    /// EDGE_BENCH_TENANT_WATCHES, EDGE_BENCH_TENANT_POLLS: one tenant's
    /// ContainerAppWatches on another's Pull Zone with a key that cannot read it, and
    /// the other's polls measured meanwhile
    pub tenant_watches: usize,
    pub tenant_polls: usize,
    /// EDGE_BENCH_PAUSED_WATCHES: paused ContainerAppWatches with the largest status
    /// the operator caches
    pub paused_watches: usize,
}

/// The median of `values` (the mean of the middle two when they are even).
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The suites, in the order they run.
const SUITES: [&str; 5] = ["search", "operator", "rate", "cdn", "tenants"];

fn env_or<T: FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(raw) => raw.parse().map_err(|_| format!("{name}={raw:?} is not valid")),
        Err(_) => Ok(default),
    }
}

fn duration_or(name: &str, default: &str) -> Result<Duration, String> {
    let raw = std::env::var(name).unwrap_or_else(|_| default.to_string());
    humantime::parse_duration(&raw).map_err(|e| format!("{name}={raw:?}: {e}"))
}

impl Settings {
    fn from_env() -> Result<Self, String> {
        let smoke = match std::env::var("EDGE_BENCH_SCALE").as_deref() {
            Ok("full") | Err(_) => false,
            Ok("smoke") => true,
            Ok(other) => return Err(format!("EDGE_BENCH_SCALE={other:?}: expected full or smoke")),
        };
        fn pick<T>(smoke: bool, full: T, small: T) -> T {
            if smoke { small } else { full }
        }
        let large = env_or("EDGE_BENCH_LARGE_OBJECTS", pick(smoke, 10_000, 0))?;
        let settings = Self {
            smoke,
            suites: env_or("EDGE_BENCH_SUITES", "search,operator,rate,cdn,tenants".to_string())?
                .split(',')
                .map(str::to_string)
                .collect(),
            python: env_or("EDGE_BENCH_PYTHON", "python3".to_string())?,
            events: env_or("EDGE_BENCH_EVENTS", pick(smoke, 1_000_000, 20_000))?,
            runs: env_or("EDGE_BENCH_RUNS", pick(smoke, 15, 3))?,
            objects: env_or("EDGE_BENCH_OBJECTS", pick(smoke, 1_000, 100))?,
            large_objects: (large > 0).then_some(large),
            convergence_delay: duration_or("EDGE_BENCH_CONVERGENCE_DELAY", "0s")?,
            idle: duration_or("EDGE_BENCH_IDLE", pick(smoke, "60s", "20s"))?,
            resync: duration_or("EDGE_BENCH_RESYNC", pick(smoke, "15s", "5s"))?,
            watches: env_or("EDGE_BENCH_WATCHES", 20)?,
            rate_duration: duration_or("EDGE_BENCH_RATE_DURATION", pick(smoke, "2m", "30s"))?,
            poll_watches: env_or("EDGE_BENCH_POLL_WATCHES", pick(smoke, 1_000, 60))?,
            poll_interval: duration_or("EDGE_BENCH_POLL_INTERVAL", pick(smoke, "60s", "10s"))?,
            busy_zones: env_or("EDGE_BENCH_BUSY_ZONES", pick(smoke, 250, 25))?,
            cdn_per_hour: env_or("EDGE_BENCH_CDN_PER_HOUR", 1_000_000)?,
            cdn_window: duration_or("EDGE_BENCH_CDN_WINDOW", pick(smoke, "10m", "1m"))?,
            cdn_steady_polls: env_or("EDGE_BENCH_CDN_POLLS", pick(smoke, 12, 3))?,
            tenant_objects: env_or("EDGE_BENCH_TENANT_OBJECTS", pick(smoke, 5_000, 300))?,
            tenant_watches: env_or("EDGE_BENCH_TENANT_WATCHES", pick(smoke, 200, 20))?,
            tenant_polls: env_or("EDGE_BENCH_TENANT_POLLS", pick(smoke, 12, 1))?,
            paused_watches: env_or("EDGE_BENCH_PAUSED_WATCHES", pick(smoke, 3_000, 100))?,
        };
        if let Some(unknown) = settings.suites.iter().find(|s| !SUITES.contains(&s.as_str())) {
            return Err(format!(
                "EDGE_BENCH_SUITES: unknown suite {unknown:?} ({})",
                SUITES.join(", ")
            ));
        }
        if settings.objects == 0
            || settings.watches == 0
            || settings.poll_watches == 0
            || settings.events == 0
            || settings.runs == 0
            || settings.cdn_per_hour == 0
            || settings.cdn_steady_polls == 0
            || settings.tenant_objects == 0
            || settings.tenant_watches == 0
            || settings.tenant_polls == 0
            || settings.paused_watches == 0
        {
            return Err(
                "EDGE_BENCH_OBJECTS, _WATCHES, _POLL_WATCHES, _EVENTS, _RUNS, _CDN_PER_HOUR, _CDN_POLLS, _TENANT_OBJECTS, _TENANT_WATCHES, _TENANT_POLLS and _PAUSED_WATCHES must be positive"
                    .to_string(),
            );
        }
        if settings.cdn_window < Duration::from_secs(60) {
            return Err("EDGE_BENCH_CDN_WINDOW must be at least 1m".to_string());
        }
        if settings.poll_interval < Duration::from_secs(10) {
            return Err("EDGE_BENCH_POLL_INTERVAL must be at least 10s (the CRD's minimum)".to_string());
        }
        if settings.idle < settings.resync {
            return Err("EDGE_BENCH_IDLE must be at least EDGE_BENCH_RESYNC".to_string());
        }
        Ok(settings)
    }

    fn includes(&self, suite: &str) -> bool {
        self.suites.iter().any(|s| s == suite)
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("benchmark: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut report = Report::new(settings.smoke);
    if settings.includes("search")
        && let Err(error) = search::run(&settings, &mut report)
    {
        report.error("search", &error);
    }
    if SUITES[1..].iter().any(|suite| settings.includes(suite)) {
        match harness::Cluster::from_env().await {
            Ok(cluster) => {
                if settings.includes("operator") {
                    if let Err(error) = access_lists::run(&cluster, &settings, &mut report).await {
                        report.error("operator", &format!("{error:#}"));
                    }
                    if let Err(error) = flood::run(&cluster, &mut report).await {
                        report.error("operator", &format!("{error:#}"));
                    }
                }
                if settings.includes("rate") {
                    if let Err(error) = app_watches::run(&cluster, &settings, &mut report).await {
                        report.error("rate discipline", &format!("{error:#}"));
                    }
                    if let Err(error) = poll_quota::run(&cluster, &settings, &mut report).await {
                        report.error("rate discipline", &format!("{error:#}"));
                    }
                }
                if settings.includes("cdn")
                    && let Err(error) = busy_pull_zone::run(&cluster, &settings, &mut report).await
                {
                    report.error("busy Pull Zone", &format!("{error:#}"));
                }
                if settings.includes("tenants") {
                    tenants::run(&cluster, &settings, &mut report).await;
                }
            }
            Err(error) => report.error("operator", &format!("{error:#}")),
        }
    }
    println!(
        "\n{} benchmark, {} cores, {}\n",
        if settings.smoke { "smoke" } else { "full" },
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        chrono::Utc::now().format("%Y-%m-%d")
    );
    print!("{}", report.render());
    if report.failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
